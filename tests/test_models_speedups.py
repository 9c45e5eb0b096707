"""The detectors' incremental and shared computations give exactly what they replace.

Running sums kept as bins arrive and leave are compared with sums taken afresh, a computation
shared between two searches with what each search computed alone, the busy windows' medians with
numpy's and with an argmax per rank, depth_bound with its definition written out, Mann-Whitney
with scipy's; on random inputs. The references live here, in the tests: the product has one path.
"""

from __future__ import annotations

import math
import pickle
import random

import numpy as np

from pathwatch.models.detectors.diurnal import busy_window, depth_bound, window_medians
from pathwatch.models.detectors.loss import LossDetector, _reference_sums


def _reference_of(detector: LossDetector) -> list:
    bins = list(detector.bins)
    return bins[: max(0, len(bins) - detector.p.recent_hours)]


def test_loss_reference_sums_kept_as_bins_move_equal_sums_taken_afresh():
    rng = random.Random(5)
    detector = LossDetector("a", "b")
    for hour in range(400):
        lost = rng.choice((0, 0, 1, 3, 4, 5, 6, 40, 700))
        detector._add_bin((hour, lost, rng.randint(1, 40_000)))
        assert detector.reference_sums == _reference_sums(_reference_of(detector))


def test_loss_ordered_rates_kept_as_bins_move_equal_the_rates_sorted_afresh():
    from pathwatch.models.detectors.loss import _rate, _rates, without_bursts

    rng = random.Random(8)
    detector = LossDetector("a", "b")
    p = detector.p
    for hour in range(400):
        lost = rng.choice((0, 0, 1, 3, 4, 5, 6, 40, 700))
        detector._add_bin((hour, lost, rng.choice((rng.randint(1, 40_000), 36_000, 3600))))
        bins = list(detector.bins)
        reference, recent = _reference_of(detector), bins[-p.recent_hours:]
        assert detector.reference_rates == sorted(_rates([b[1] for b in reference], [b[2] for b in reference]))
        assert detector.recent_rates.sorted == sorted(map(_rate, recent))
        first = detector.bins_seen - len(bins)
        for kept, floor in ((detector.reference_rates, p.rate_floor), (detector.recent_rates.sorted, 1e-4)):
            part = reference if kept is detector.reference_rates else recent
            at = first if part is reference else detector.bins_seen - len(recent)
            if part:
                fresh = without_bursts(part, floor, p.burst_hours, p.burst_alpha)
                assert without_bursts(part, floor, p.burst_hours, p.burst_alpha, kept) == fresh
                assert without_bursts(part, floor, p.burst_hours, p.burst_alpha, kept,
                                      detector._neighbours_memo(), at) == fresh
        early = bins[: p.min_reference + 10]            # (the first days' split: other slices, same memo)
        for part, at in ((early[: p.min_reference], first), (early[p.min_reference:], first + p.min_reference)):
            assert without_bursts(part, 1e-5, p.burst_hours, p.burst_alpha, None, detector._neighbours_memo(), at) \
                == without_bursts(part, 1e-5, p.burst_hours, p.burst_alpha)
    assert len(detector.neighbours) <= 4 * p.history_hours + 200
    assert "neighbours" not in detector.__getstate__()
    restored = pickle.loads(pickle.dumps(detector))
    assert restored.neighbours == {} and list(restored.lossy) == list(detector.lossy)
    assert restored.reference_rates == detector.reference_rates
    assert list(restored.recent_rates) == list(detector.recent_rates)
    assert restored.recent_rates.sorted == detector.recent_rates.sorted


def _plain_without_bursts(bins, floor, side, alpha):
    """without_bursts written plainly: every hour, its neighbours' rates afresh, no memo."""
    from pathwatch.models.detectors.loss import _neighbour_rates
    from pathwatch.models.significance import poisson_tail_below
    from pathwatch.models.window import median

    if len(bins) < 2 or not any(b[1] >= 5 for b in bins):
        return bins
    typical = max(median([b[1] / b[2] if b[2] else 0.0 for b in bins]), floor)
    out = list(bins)
    for i, (hour, lost, sent) in enumerate(bins):
        if lost < 5 or lost <= 3 * typical * sent:
            continue
        quieter, louder = _neighbour_rates(bins, i, side)
        if poisson_tail_below(lost, max(louder, floor) * sent, alpha):
            out[i] = (hour, int(round(max(quieter, floor) * sent)), sent)
    return out


def test_without_bursts_equals_the_plain_hour_by_hour_version():
    from pathwatch.models.detectors.loss import without_bursts

    rng = random.Random(15)
    for _ in range(400):
        level = rng.choice((0.0, 1e-5, 1e-4, 2e-3))
        bins = []
        for hour in range(rng.randint(1, 120)):
            sent = rng.choice((3600, 36_000, rng.randint(0, 40_000)))
            lost = min(sent, int(level * sent) + rng.choice((0, 0, 0, 1, 4, 5, 6, 40, 300, 5000)) * (rng.random() < 0.2))
            bins.append((hour, lost, sent))
        floor = rng.choice((1e-6, level or 1e-6, 1e-3))
        assert without_bursts(bins, floor, 6, 1e-6) == _plain_without_bursts(bins, floor, 6, 1e-6)


def _runs_over_days(rng, low: int, high: int, odd_share: float = 0.0, odd=(np.nan,)):
    """Random (t, x) of ``low``..``high`` runs over 4 days, on the hour 3 times in 10 (the windows'
    edges), rates or small ints, one value replaced by one of ``odd`` ``odd_share`` of the time."""
    n = int(rng.integers(low, high))
    t = np.sort(rng.uniform(0, 4 * 86400.0, n))
    if rng.random() < 0.3:
        t = np.round(t / 3600.0) * 3600.0
    x = rng.choice((rng.uniform(0.5, 10.0, n), rng.integers(1, 4, n).astype(float)))
    if rng.random() < odd_share:
        x[rng.integers(0, n)] = rng.choice(odd)
    return t, x


def test_busy_window_on_shared_medians_equals_busy_window_alone():
    rng = np.random.default_rng(11)
    for _ in range(300):
        t, x = _runs_over_days(rng, 2, 120, odd_share=0.1)
        medians = window_medians(t, x)
        for lower_is_worse in (True, False):
            for min_in in (3, 4):
                assert busy_window(t, x, lower_is_worse, min_in, medians) == busy_window(t, x, lower_is_worse, min_in)


def _deepest_split(values: list[float], lower_is_worse: bool, min_in: int) -> float:
    """depth_bound's definition, plainly: over every count n of values inside, 1 - the median of the
    n smallest / the median of the rest (mirrored when higher is worse), NaN depths left out; each
    median as window_medians takes it, the mean of the two middle values (one value twice for an
    odd count: two huge values overflow to inf there, as in busy_window)."""
    def middle(part: list[float]) -> float:
        return (part[(len(part) - 1) // 2] + part[len(part) // 2]) / 2

    depths = []
    for n_in in range(min_in, len(values) - 2 * min_in + 1):
        if lower_is_worse:
            depth = 1 - middle(values[:n_in]) / middle(values[n_in:])
        else:
            n_out = len(values) - n_in
            depth = middle(values[n_out:]) / middle(values[:n_out]) - 1
        if depth == depth:
            depths.append(depth)
    return max(depths, default=-math.inf)


def test_depth_bound_is_the_deepest_split_of_the_sorted_values():
    rng = random.Random(3)
    for _ in range(400):
        n = rng.choice((rng.randint(3, 40), rng.randint(100, 400)))
        awkward = rng.random() < 0.3
        values = sorted(rng.choice((rng.uniform(0.1, 10.0), float(rng.randint(1, 4)), rng.randint(1, 4), math.inf,
                                    1e308, 5e-324)) if awkward else rng.uniform(0.1, 10.0) for _ in range(n))
        for lower_is_worse in (True, False):
            for min_in in (3, 4, 60):
                assert depth_bound(values, lower_is_worse, min_in) == _deepest_split(values, lower_is_worse, min_in)


def test_window_medians_are_the_medians_inside_and_outside_each_window():
    from pathwatch.models.detectors.diurnal import _STARTS, _WIDTHS, DAY

    rng = np.random.default_rng(12)
    for _ in range(100):
        n = int(rng.integers(1, 150))
        t = np.sort(rng.uniform(0, 4 * 86400.0, n))
        x = rng.choice((rng.uniform(0.5, 10.0, n), rng.integers(1, 4, n).astype(float)))
        n_in, m_in, m_out = window_medians(t, x)
        hours = (t % DAY) / 3600.0
        for row, (start, width) in enumerate(zip(_STARTS, _WIDTHS)):
            inside = ((hours - start) % 24) < width
            assert n_in[row] == inside.sum()
            if inside.any():
                assert m_in[row] == np.median(x[inside])
            if not inside.all():
                assert m_out[row] == np.median(x[~inside])


def test_mannwhitney_pvalue_is_on_the_same_side_of_alpha_as_scipy():
    """scipy.stats.mannwhitneyu is the oracle: the same side of alpha always, scipy's own value near
    alpha, and a value computed here (beyond MWU_FACTOR of alpha) scipy's to the last digits where
    scipy answers asymptotically, a bound no lower than scipy's where it counts the exact distribution."""
    from scipy.stats import mannwhitneyu

    from pathwatch.models.significance import MWU_FACTOR, _mwu_exact_bound, _mwu_statistic, mannwhitney_pvalue

    rng = np.random.default_rng(21)
    computed = {True: 0, False: 0}
    for _ in range(1500):
        n1, n2 = int(rng.integers(1, 40)), int(rng.choice((rng.integers(1, 450), rng.integers(1, 12))))
        shape = int(rng.integers(0, 4))
        if shape == 0:
            x, y = rng.normal(0, 1, n1), rng.normal(rng.uniform(-2, 2), 1, n2)
        elif shape == 1:          # many ties
            x, y = rng.integers(0, 5, n1).astype(float), rng.integers(0, 6, n2).astype(float)
        elif shape == 2:
            x, y = np.round(rng.exponential(1, n1), 1), np.round(rng.exponential(1.5, n2), 1) + 0.1
        else:                     # awkward values: scipy answers
            x, y = rng.normal(0, 1, n1), rng.normal(0, 1, n2)
            x[0] = rng.choice((np.nan, np.inf, -np.inf))
        for alternative in ("less", "greater"):
            reference = mannwhitneyu(x, y, alternative=alternative).pvalue
            found = _mwu_statistic(x, y, alternative)
            if found is not None and found[-1]:        # scipy's exact distribution: the bound holds
                assert _mwu_exact_bound(*found[:3]) >= reference * (1 - 1e-12)
            for alpha in (1e-3, 1e-6, 0.05, reference, reference * 1.5 * MWU_FACTOR):
                p = mannwhitney_pvalue(x, y, alternative, alpha)
                assert (p > alpha) == (reference > alpha) and (p <= alpha) == (reference <= alpha)
                if alpha / MWU_FACTOR < 0.999 * reference < 1.001 * reference < alpha * MWU_FACTOR or found is None:
                    assert p == reference or (p != p and reference != reference)
                elif found[-1]:
                    assert p >= reference * (1 - 1e-12)
                    computed[True] += 1
                else:
                    assert math.isclose(p, reference, rel_tol=1e-9, abs_tol=1e-300), (p, reference)
                    computed[False] += 1
    assert min(computed.values()) > 1000


def test_mannwhitney_exact_tail_is_scipys_exact_distribution():
    """The exact tail counted in integers is scipy's exact p-value to the last digits (either order
    of sizes, either side), so that one beyond MWU_FACTOR of alpha is on scipy's side."""
    from scipy.stats import mannwhitneyu

    from pathwatch.models.significance import _mwu_exact_tail, _mwu_statistic

    rng = np.random.default_rng(22)
    checked = 0
    for _ in range(1500):
        n1, n2 = int(rng.integers(1, 9)), int(rng.integers(1, 300))
        if rng.random() < 0.5:
            n1, n2 = n2, n1
        x, y = rng.normal(0, 1, n1), rng.normal(rng.uniform(-3, 3), 1, n2)
        for alternative in ("less", "greater"):
            found = _mwu_statistic(x, y, alternative)
            mine = _mwu_exact_tail(*found[:3])
            if not found[-1] or mine is None:
                continue
            reference = mannwhitneyu(x, y, alternative=alternative).pvalue
            assert math.isclose(mine, reference, rel_tol=1e-12, abs_tol=1e-300), (n1, n2, mine, reference)
            checked += 1
    assert checked > 2000
    assert _mwu_exact_tail(2.5, 3, 4) is None              # (ties: not scipy's exact distribution)


def test_diurnal_deep_enough_never_skips_a_window_the_searches_would_judge():
    from pathwatch.models.detectors.diurnal import DiurnalDetector

    detector = DiurnalDetector("a", "b")
    rng = np.random.default_rng(22)
    skipped = 0
    for _ in range(600):
        n = int(rng.integers(9, 120))
        t = np.sort(rng.uniform(0, 3 * 86400.0, n))
        if rng.random() < 0.3:
            t = np.round(t / 3600.0) * 3600.0
        x = 9e8 * (1 + rng.normal(0, 0.1, n))
        x[rng.random(n) < rng.uniform(0, 0.4)] *= rng.uniform(0.2, 0.9)
        if rng.random() < 0.05:
            x[rng.integers(0, n)] = rng.choice((np.nan, np.inf))
        medians = window_medians(t, x)
        if detector._deep_enough(t, x, medians, 3):
            continue
        skipped += 1
        for min_in in (3, 4):
            found = busy_window(t, x, True, min_in, medians)
            assert found is None or found[2] < detector.p.depth
    assert skipped > 100


def test_clock_floor_bounds_decide_as_the_floor_looked_at_in_full():
    """The kept bounds only skip what max − min would skip: the same drift answers and anomalies
    as a detector that looks at the whole floor every time."""
    from pathwatch.models.detectors.clock import _NO_BOUNDS, ClockDetector
    from tests.detector_series import T0, latency

    rng = random.Random(9)
    for _ in range(60):
        kept, full = ClockDetector("a", "b"), ClockDetector("a", "b")
        level, slope = 20.0, rng.choice((0.0, 0.0, 1.0, 4.0, -5.0, 12.0))
        for i in range(300):
            t = T0 + 600 * i + rng.choice((0, 0, rng.random()))
            level += slope / 6 + rng.choice((0.0, 0.0, rng.gauss(0, 0.3), rng.choice((-8.0, 8.0))))
            delay = rng.choice((level, level, level, round(level, 1), math.nan if rng.random() < 0.01 else level))
            obs = latency(t, delay)
            full.floor_bounds = _NO_BOUNDS
            assert kept.observe(obs) == full.observe(obs)
            assert kept.facts == full.facts
            values = list(kept.floor_values)
            low, high = kept.floor_bounds
            if values and not any(v != v for v in values):
                assert low <= min(values) and high >= max(values)


def test_loss_clean_runs_kept_in_order_mirror_the_clean_runs():
    from pathwatch.models.window import median
    from tests.detector_series import T0, run

    rng = random.Random(10)
    detector = LossDetector("a", "b")
    for i in range(600):
        bps = rng.choice((9e9, 9e9 * rng.uniform(0.8, 1.1), 2e9, float(rng.randint(1, 3)) * 1e9))
        detector._throughput(run(T0 + 7200 * i, bps, retransmits=rng.choice((0, 0, 3, 80, 400))))
        clean = detector.clean
        assert list(detector.clean_sorted.bps) == [b for b, _ in clean]
        assert list(detector.clean_sorted.retransmits) == [r for _, r in clean]
        if clean:
            assert detector.clean_sorted.bps.median() == median(b for b, _ in clean)
            assert detector.clean_sorted.retransmits.median() == median(r for _, r in clean)
    copy = pickle.loads(pickle.dumps(detector))
    assert copy.clean_sorted.retransmits.sorted == detector.clean_sorted.retransmits.sorted


def test_loss_tail_bound_stops_only_hours_the_full_judgement_stops():
    """The kept bound of the recent hours' highest tail rate is never below it, and a detector that
    relies on it judges every hour as one that computes the rate afresh."""
    from pathwatch.models.detectors.loss import _highest_tail_rate

    rng = random.Random(12)
    for _ in range(12):
        kept, fresh = LossDetector("a", "b"), LossDetector("a", "b")
        level = rng.choice((0.0, 1e-5, 1e-4, 2e-3))
        for hour in range(260):
            if rng.random() < 0.02:
                level = rng.choice((0.0, 1e-5, 1e-4, 2e-3, 1e-2))
            sent = rng.choice((3600, 36_000, rng.randint(1, 40_000)))
            lost = min(sent - 1, int(level * sent + rng.choice((0, 0, 0, 1, 2, 6, 300)) * (rng.random() < 0.1)))
            for detector in (kept, fresh):
                detector._add_bin((hour, lost, sent))
            bins, p = list(kept.bins), kept.p
            recent = bins[-p.recent_hours:] if len(bins) - p.recent_hours >= p.min_reference else bins[p.min_reference:]
            assert not recent or kept.tail_bound >= _highest_tail_rate(recent)
            fresh.tail_bound = math.inf
            assert kept._judge(hour * 3600.0 + 3600) == fresh._judge(hour * 3600.0 + 3600)
            assert kept.loss_kind == fresh.loss_kind and kept.episodes == fresh.episodes


def _ranked_medians(sorted_x: np.ndarray, ranks: np.ndarray) -> np.ndarray:
    """Each row's median from its running count of chosen values: the values where the count first
    reaches the middle ranks, found by one argmax per rank and side (index 0 when none does)."""
    counts = ranks[:, -1]
    lo = np.argmax(ranks >= ((counts + 1) // 2)[:, None], axis=1)
    hi = np.argmax(ranks >= (counts // 2 + 1)[:, None], axis=1)
    return (sorted_x[lo] + sorted_x[hi]) / 2


def test_window_medians_equal_the_argmax_search_on_each_rank():
    """window_medians' one searchsorted finds what an argmax per rank finds, NaNs and all."""
    from pathwatch.models.detectors.diurnal import _STARTS, _WIDTHS, DAY

    rng = np.random.default_rng(13)
    for _ in range(400):
        t, x = _runs_over_days(rng, 1, 200, odd_share=0.2, odd=(np.nan, np.inf, -np.inf))
        n = len(t)
        order = np.argsort(x, kind="stable")
        xs, hours = x[order], (t[order] % DAY) / 3600.0
        ranks_in = np.cumsum(((hours[None, :] - _STARTS[:, None]) % 24) < _WIDTHS[:, None], axis=1)
        expected = (ranks_in[:, -1], _ranked_medians(xs, ranks_in), _ranked_medians(xs, np.arange(1, n + 1) - ranks_in))
        for got, want in zip(window_medians(t, x), expected):
            assert got.dtype == want.dtype and np.array_equal(got, want, equal_nan=True)


def test_sorted_window_kept_when_an_equal_float_replaces_the_oldest_equals_statistics():
    """Steady gaps (the same float leaving and arriving) keep ``sorted``; the median is still
    statistics.median's, of the same type and sign, also once ints, zeros and NaNs come and go."""
    import statistics
    from collections import deque

    from pathwatch.models.window import SortedWindow

    def same(a, b) -> bool:
        return (a != a and b != b) or (type(a) is type(b) and a == b and math.copysign(1, a) == math.copysign(1, b))

    rng = random.Random(14)
    for _ in range(300):
        size = rng.randint(1, 14)
        window, plain = SortedWindow(size), deque(maxlen=size)
        steady = rng.choice((600.0, 3600.0, 0.5))
        for _ in range(150):
            value = rng.choice((steady, steady, steady, steady, steady + rng.random(), 600, 0.0, -0.0,
                                math.nan if rng.random() < 0.05 else steady))
            window.append(value)
            plain.append(value)
            assert window.others == sum(type(v) is not float for v in plain)
            assert [v for v in window.sorted] == sorted(v for v in plain if v == v) or window.nans
            assert same(window.median(), statistics.median(plain))
    old = SortedWindow(3, [600.0, 600, 5.0])
    copy = pickle.loads(pickle.dumps(old))
    assert copy.others == 1 and list(copy) == list(old)


def test_rough_depth_bound_is_never_below_depth_bound():
    from pathwatch.models.detectors.diurnal import rough_depth_bound

    rng = random.Random(15)
    for _ in range(3000):
        n = rng.randint(1, 140)
        awkward = rng.random() < 0.3
        values = sorted(rng.choice((rng.uniform(0.1, 10.0), float(rng.randint(1, 4)), math.inf, 1e308, 5e-324,
                                    math.nan if rng.random() < 0.1 else 1.0, -1.0 if rng.random() < 0.05 else 2.0))
                        if awkward else rng.choice((rng.uniform(0.5, 1.0), rng.uniform(0.9, 1.1))) for _ in range(n))
        for lower_is_worse in (True, False):
            for min_in in (3, 4, 5):
                rough, exact = rough_depth_bound(values, lower_is_worse, min_in), depth_bound(values, lower_is_worse, min_in)
                assert rough >= exact or (rough != rough and exact == -math.inf), (values, lower_is_worse, min_in)


def test_levels_mad_mapped_equals_the_listed_deviations():
    from pathwatch.models.level_tracker import mad
    from pathwatch.models.window import median

    rng = random.Random(16)
    for _ in range(2000):
        values = [rng.choice((rng.gauss(20, 3), float(rng.randint(1, 5)), rng.randint(1, 5), 0.0, -0.0,
                              math.nan if rng.random() < 0.02 else 7.5)) for _ in range(rng.randint(1, 30))]
        center = median(values)
        got, want = mad(values), median([abs(v - center) for v in values])
        assert (got != got and want != want) or (type(got) is type(want) and got == want)


def _same(a, b) -> bool:
    """The same number: value, type and sign (NaNs alike)."""
    return (a != a and b != b) or (type(a) is type(b) and a == b and math.copysign(1, a) == math.copysign(1, b))


def test_sorted_window_append_false_only_when_sorted_and_median_stay():
    import statistics
    from collections import deque

    from pathwatch.models.window import SortedWindow

    rng = random.Random(17)
    kept = 0
    for _ in range(300):
        size = rng.randint(1, 14)
        window, plain = SortedWindow(size), deque(maxlen=size)
        steady = rng.choice((600.0, 3600.0, 6.8))
        for _ in range(150):
            value = rng.choice((steady, steady, steady, steady, steady + 0.1, 600, 0.0, -0.0,
                                math.nan if rng.random() < 0.05 else steady))
            before_sorted, before_median = list(window.sorted), window.median() if len(window) else None
            plain.append(value)
            if not window.append(value):
                kept += 1
                assert window.sorted == before_sorted and _same(window.median(), before_median)
            assert _same(window.median(), statistics.median(plain))
    assert kept > 1000


def test_silence_kept_wait_gives_the_due_times_worked_out_afresh():
    """The wait a cadence keeps while its gaps do not move: the same due times and anomalies as a
    detector that works the wait out anew at every observation, and as _due says."""
    from pathwatch.models.detectors.silence import _UNKNOWN, SilenceDetector
    from tests.detector_series import T0, latency, run, trace

    rng = random.Random(18)
    for _ in range(40):
        kept, fresh = SilenceDetector("a", "b"), SilenceDetector("a", "b")
        t = {"latency": T0, "tracepath": T0 + 100, "throughput": T0 + 200}
        every = {"latency": 600.0, "tracepath": 3600.0, "throughput": rng.choice((7200.0, 7200))}
        for _ in range(400):
            kind = rng.choice(("latency", "latency", "latency", "tracepath", "throughput"))
            t[kind] += rng.choice((every[kind], every[kind], every[kind], every[kind] + rng.randint(-9, 9),
                                   every[kind] * rng.choice((2, 5, 40)), 0.0, -1.0))
            obs = (latency(t[kind], 5.0) if kind == "latency" else trace(t[kind], ["r1", "r2"], tool=kind)
                   if kind == "tracepath" else run(t[kind], 9e9))
            now = obs.t
            for detector in (kept, fresh):
                if detector.deadline() is not None and detector.deadline() < now:
                    assert detector.on_time(detector.deadline()) is not None
            for cadence in fresh.cadences.values():
                cadence.wait = _UNKNOWN
            assert kept.observe(obs) == fresh.observe(obs)
            assert kept.dues == fresh.dues and kept.deadline() == fresh.deadline()
            assert kept.episodes == fresh.episodes
            key = "latency" if kind == "latency" else kind
            cadence = kept.cadences[key]
            if key not in kept.overdue:                 # (the wait worked out afresh from the gaps)
                wait = cadence.work_out_wait(kept.p)
                assert kept.dues[key] == (None if wait is None else cadence.last + wait)
            else:
                assert kept.dues[key] is None
        copy = pickle.loads(pickle.dumps(kept))
        assert all(c.wait is _UNKNOWN for c in copy.cadences.values()) and copy.dues == kept.dues


class _PlainShift:
    """levels' _Shift as it was: a deque whose median and MAD are worked out afresh every REFRESH adds."""

    REFRESH = 4

    def __init__(self, size: int):
        from collections import deque

        self.base, self._cached, self._adds = deque(maxlen=size), None, 0

    def add(self, value) -> None:
        self.base.append(value)
        self._adds += 1
        if self._adds >= self.REFRESH or len(self.base) < self.base.maxlen:
            self._cached, self._adds = None, 0

    def rebase(self, values) -> None:
        self.base.clear()
        self.base.extend(values)
        self._cached, self._adds = None, 0

    def reference(self, k: float, floor: float, rel: float):
        from pathwatch.models.level_tracker import mad
        from pathwatch.models.window import median

        if self._cached is None:
            m = median(self.base)
            self._cached = m, max(floor, rel * abs(m), k * 1.4826 * mad(self.base, m))
        return self._cached


def test_levels_shift_kept_reference_equals_the_plain_recomputation():
    from pathwatch.models.level_tracker import LevelTracker as _Shift

    rng = random.Random(19)
    for _ in range(200):
        size = rng.choice((3, 6, 24))
        shift, plain = _Shift(size), _PlainShift(size)
        steady = rng.choice((6.8, 20.0, 9e9))
        for _ in range(300):
            roll = rng.random()
            if roll < 0.02:
                values = [rng.choice((steady, steady * 1.1, 7)) for _ in range(rng.randint(0, size + 2))]
                shift.rebase(iter(values))
                plain.rebase(iter(values))
                continue
            value = rng.choice((steady, steady, steady, steady, steady * 1.01, steady * 0.9, round(steady), 0.0,
                                -0.0, math.nan if rng.random() < 0.02 else steady, rng.gauss(steady, 1)))
            shift.add(value)
            plain.add(value)
            if rng.random() < 0.7:
                k, floor, rel = (4.0, 1.0, 0.05) if steady < 100 else (2.5, 0.0, 0.3)
                kept = shift._cached
                got, want = shift.reference(k, floor, rel), plain.reference(k, floor, rel)
                assert kept is None or got is kept      # (what _latency reads without the call)
                assert _same(got[0], want[0]) and _same(got[1], want[1]), (got, want, list(plain.base))
        copy = pickle.loads(pickle.dumps(shift))
        assert all(map(_same, copy.base, shift.base))
        if shift.base.values:
            assert _same(copy.reference(4.0, 1.0, 0.05)[1], shift.reference(4.0, 1.0, 0.05)[1])


def test_route_best_takes_the_first_known_route_when_it_is_the_traces():
    """When the first known route is the trace's own (and some hop answers), best takes it, with no gaps."""
    from pathwatch.models.detectors.route import SILENT, _ToolRoutes, _Variant
    from tests.detector_series import T0, trace

    rng = random.Random(20)
    hit = 0
    for _ in range(3000):
        pool = ("r1", "r2", "r3", "x", None, SILENT)
        variants = []
        for _ in range(rng.randint(1, 4)):
            variant = _Variant(trace(T0, [rng.choice(pool[:5]) for _ in range(rng.randint(1, 5))],
                                     reached=rng.random() < 0.7))
            if rng.random() < 0.2:
                variant.hops = tuple(rng.choice(pool) for _ in variant.hops)
            variants.append(variant)
        route = variants[0].hops if rng.random() < 0.6 else tuple(rng.choice(pool[:5]) for _ in range(rng.randint(0, 5)))
        reached = rng.random() < 0.7
        if variants[0].hops == route and route.count(None) != len(route):
            hit += 1
            assert _ToolRoutes.best(variants, route, reached) == (variants[0], 0)
    assert hit > 1000


def test_clock_skips_the_drift_search_only_where_the_floor_moved_too_little():
    """Where observe answers 'no drift' without calling _drift, on a full floor, the floor's delays
    moved less than half the drift threshold over its span (max - min, the floor looked at in full)."""
    from pathwatch.models.detectors.clock import ClockDetector
    from tests.detector_series import T0, latency

    rng = random.Random(21)
    skipped = 0
    for _ in range(40):
        detector = ClockDetector("a", "b")
        called = []
        plain = detector._drift
        detector._drift = lambda least: called.append(1) or plain(least)
        p = detector.p
        level, slope = 20.0, rng.choice((0.0, 0.0, 0.5, 1.0, 4.0, -5.0, 12.0))
        for i in range(300):
            level += slope / 6 + rng.choice((0.0, 0.0, rng.gauss(0, 0.3)))
            if rng.random() < 0.02:
                level += rng.choice((-8.0, 8.0))
            level = min(max(level, 1.0), 4000.0)        # (plausible delays: observe's drift test runs)
            obs = latency(T0 + 600 * i + rng.choice((0, 0, rng.random())), level,
                          lost=rng.choice((0, 0, 0, 3500)))
            called.clear()
            detector.observe(obs)
            floor = detector.floor
            if not called and len(floor) >= p.drift_window:
                skipped += 1
                values = list(detector.floor_values)
                least = p.drift_ms_per_h * ((floor[-1][0] - floor[0][0]) / 3600.0) * 0.5
                assert max(values) - min(values) < least
    assert skipped > 1000


def test_diurnal_deep_enough_answers_as_busy_window_deepest():
    """_deep_enough asks whether any usable window is deep enough: what busy_window's deepest says."""
    from pathwatch.models.detectors.diurnal import DiurnalDetector

    detector = DiurnalDetector("a", "b")
    rng = np.random.default_rng(23)
    answers = set()
    for _ in range(1500):
        t, x = _runs_over_days(rng, 2, 120)
        x = x * rng.choice((1.0, 1e9, -1.0 if rng.random() < 0.1 else 1.0))
        if rng.random() < 0.5:
            x[rng.random(len(x)) < rng.uniform(0, 0.4)] *= rng.uniform(0.2, 0.9)
        if rng.random() < 0.05:
            x[rng.integers(0, len(x))] = rng.choice((np.nan, np.inf, 0.0, 1e-320, 1.7e308))
        with np.errstate(all="ignore"):
            medians = window_medians(t, x)
        for min_in in (3, 4):
            try:
                got = detector._deep_enough(t, x, medians, min_in)
            except ValueError:      # (busy_window on medians that all overflowed: it raises as it did)
                got = "raised"
            if np.isfinite(x).all():
                try:
                    found = busy_window(t, x, True, min_in, medians)
                except ValueError:
                    assert got == "raised"
                    continue
                assert got == (found is not None and found[2] >= detector.p.depth)
            else:
                assert got is True
            answers.add(got)
    assert {True, False} <= answers


def test_window_offsets_by_where_equal_the_remainder():
    """window_medians' offsets from each start hour, lag + 24 where the lag is negative, are lag % 24."""
    rng = np.random.default_rng(24)
    t = np.concatenate([rng.uniform(0, 3e9, 200_000), np.round(rng.uniform(0, 3e9, 20_000) / 3600) * 3600,
                        np.round(rng.uniform(0, 3e9, 20_000) / 3600) * 3600 + rng.choice((-1e-6, 1e-6, 5e-7), 20_000),
                        [np.nan, np.inf, 0.0, -0.0, -3600.0, -1e-9]])
    with np.errstate(invalid="ignore"):
        hours = np.concatenate([(t % 86400.0) / 3600.0, [23.999999999999996, 5e-324, -0.0, 1e-16]])
        lag = hours[None, :] - np.arange(24)[:, None]
        want = lag % 24
    got = np.where(lag < 0, lag + 24, lag)
    assert np.array_equal(got, want, equal_nan=True)


def test_route_forget_does_nothing_when_every_known_route_is_recent():
    """_trace calls _forget only when some known route was last seen over forget_s ago: otherwise
    _forget would leave the known routes as they are."""
    from pathwatch.models.detectors.route import RouteDetector, _ToolRoutes, _Variant
    from tests.detector_series import T0, trace

    rng = random.Random(26)
    detector = RouteDetector("a", "b")
    skipped = 0
    for _ in range(3000):
        tool = _ToolRoutes("traceroute", 12)
        for _ in range(rng.randint(0, 4)):
            variant = _Variant(trace(T0, ["r1", rng.choice(("r2", "x2"))]))
            variant.first = T0 - rng.choice((0.0, 2 * 86400.0, 40 * 86400.0))
            variant.last = T0 + rng.uniform(-6 * 86400.0, 86400.0)
            tool.known.append(variant)
        now = T0 + rng.choice((0.0, 86400.0, rng.uniform(0, 9 * 86400.0), math.nan))
        if all(now - v.last <= detector.p.forget_s for v in tool.known):
            skipped += 1
            known = list(tool.known)
            detector._forget(tool, now)
            assert tool.known == known
    assert skipped > 500


def test_diurnal_holds_nan_is_any_nan():
    from pathwatch.models.detectors.diurnal import _holds_nan

    rng = random.Random(27)
    seen = set()
    for _ in range(20000):
        values = [rng.choice((rng.uniform(-5, 5), 1.0, 7, math.inf, -math.inf, math.nan, 10**400, 1e308, -0.0))
                  if rng.random() < 0.3 else rng.uniform(0.1, 9.0) for _ in range(rng.randint(0, 12))]
        if rng.random() < 0.5:
            values.sort(key=lambda v: (v != v, v if v == v else 0))
        want = any(v != v for v in values)
        assert _holds_nan(values) == want
        seen.add(want)
    assert seen == {True, False}


def test_depth_bound_stopped_at_enough_answers_as_the_full_search():
    """depth_bound told what is enough may stop at the first depth reaching it: whether the
    answer reaches it is what the full search says, and it never exceeds the full search's."""
    rng = random.Random(28)
    for _ in range(4000):
        n = rng.randint(1, 140)
        awkward = rng.random() < 0.3
        values = sorted(rng.choice((rng.uniform(0.1, 10.0), float(rng.randint(1, 4)), math.inf, 1e308, 5e-324, 3))
                        if awkward else rng.choice((rng.uniform(0.5, 1.0), rng.uniform(0.9, 1.1))) for _ in range(n))
        for lower_is_worse in (True, False):
            for min_in in (3, 4):
                full = depth_bound(values, lower_is_worse, min_in)
                for enough in (0.3, 2.0, 0.0, -math.inf, math.inf, full):
                    stopped = depth_bound(values, lower_is_worse, min_in, enough)
                    assert (stopped >= enough) == (full >= enough)
                    assert stopped <= full or (stopped != stopped and full != full)
