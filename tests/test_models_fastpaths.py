"""The detectors' shortcuts give exactly what the computations they stand in for give.

Each shortcut (a sorted sliding window, a bound that skips a test, a pure-Python pre-check) is
checked against the original computation on random inputs, including the awkward ones (ties,
equal values of different types, signed zeros, NaNs, values near the decision line).
"""

from __future__ import annotations

import math
import pickle
import random
import statistics
import warnings
from collections import deque

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import binom, kendalltau, theilslopes

from pathwatch.models.detectors.clock import ClockDetector, _kendall_tau, _median_surely_within, _theil_sen
from pathwatch.models.detectors.diurnal import busy_window, depth_bound
from pathwatch.models.detectors.silence import SilenceDetector, _Cadence
from pathwatch.models.monitor import PathMonitor
from pathwatch.models.significance import tail_exceeds
from pathwatch.models.window import SortedWindow, median
from tests.detector_series import T0, latency


def _same(a, b) -> bool:
    return (a != a and b != b) or (type(a) is type(b) and a == b and math.copysign(1, a) == math.copysign(1, b))


def test_sorted_window_median_is_statistics_median_of_the_same_window():
    rng = random.Random(1)
    for _ in range(300):
        size = rng.randint(1, 30)
        window, plain = SortedWindow(size), deque(maxlen=size)
        for _ in range(120):
            value = rng.choice([0.0, -0.0, 1, 1.0, 2.5, rng.random(), rng.randint(0, 5), 3.0,
                                float("nan") if rng.random() < 0.02 else 4.0])
            window.append(value)
            plain.append(value)
            assert list(window) == list(plain) or any(v != v for v in plain)
            assert _same(window.median(), statistics.median(plain))
            assert _same(median(plain), statistics.median(plain))


def test_sorted_window_pickles_and_empty_median_raises_like_statistics():
    window = SortedWindow(3, [3.0, 1.0, 2.0, 5.0])
    copy = pickle.loads(pickle.dumps(window))
    assert list(copy) == [1.0, 2.0, 5.0] and copy.median() == 2.0
    with pytest.raises(statistics.StatisticsError):
        SortedWindow(2).median()
    with pytest.raises(statistics.StatisticsError):
        median([])


def test_binomial_tail_bounds_decide_as_scipy_does():
    rng = random.Random(3)
    for _ in range(20000):
        n = rng.choice([rng.randint(1, 60), rng.randint(1, 5000), rng.randint(1000, 400000)])
        p = 10 ** rng.uniform(-6.5, -0.01)
        mean = n * p
        k = max(1, min(n, int(rng.choice([mean * rng.uniform(0, 6), mean + rng.gauss(0, 9) * math.sqrt(mean + 1),
                                           rng.randint(1, n)]))))
        alpha = rng.choice([1e-6, 1e-4, 1e-3, 0.05])
        assert tail_exceeds(k, n, p, alpha) == bool(binom.sf(k - 1, n, p) > alpha), (k, n, p, alpha)


def test_depth_bound_is_never_below_the_window_search():
    rng = np.random.default_rng(5)
    for _ in range(400):
        n = int(rng.integers(12, 60))
        t = T0 + np.sort(rng.uniform(0, 3 * 86400, n))
        x = 9e9 * (1 + rng.normal(0, 0.1, n))
        x[rng.random(n) < 0.2] *= rng.uniform(0.2, 0.9)
        for lower_is_worse in (True, False):
            found = busy_window(t, x, lower_is_worse, 4)
            bound = depth_bound(sorted(x.tolist()), lower_is_worse, 4)
            assert found is None or found[2] <= bound


def _scipy_drift(x: np.ndarray, y: np.ndarray) -> tuple:
    """What the clock asked scipy before: (Theil–Sen slope, Kendall's tau), quietly for empty slopes."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return theilslopes(y, x).slope, kendalltau(x, y).statistic


def _same_drift(got: tuple, want: tuple) -> bool:
    return all(type(a) is type(b) and (a == b or (a != a and b != b)) for a, b in zip(got, want))


def _drift_statistics(x: np.ndarray, y: np.ndarray) -> tuple:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _theil_sen(x, y)[0], _kendall_tau(x, y)


def test_drift_statistics_are_scipys_theil_sen_and_kendall_bit_for_bit():
    rng = random.Random(7)
    for _ in range(1500):
        n = rng.choice((2, 3, 18, 18, 18, 19, 25, 61))
        times = sorted(T0 + rng.choice([600, 600, 601, 0, 1200]) * i + rng.choice([0, 0, rng.random()]) for i in range(n))
        slope = rng.choice([0, 1, 2.9, 3.0, 3.1, 5, -4, 10])
        values = [20 + slope * (t - times[0]) / 3600 + rng.choice([0, 0, rng.gauss(0, 0.5), round(rng.gauss(0, 2))])
                  for t in times]
        if rng.random() < 0.05:
            values[rng.randrange(n)] = rng.choice((math.nan, math.inf, -math.inf))
        if rng.random() < 0.05:
            values = [values[0]] * n                     # every pair tied in y
        if rng.random() < 0.03:
            times = [times[0]] * n                       # ... or in time
        x, y = np.array(times) / 3600.0, np.array(values)
        assert _same_drift(_drift_statistics(x, y), _scipy_drift(x, y))


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 40), st.floats(-1e6, 1e6, allow_nan=False)
                          | st.sampled_from([0.0, -0.0, 1.0, 1e-300, 1.7e308, -1.7e308])),
                min_size=2, max_size=40))
def test_drift_statistics_agree_with_scipy_on_any_finite_window(points):
    x = np.array([float(t) for t, _ in points]) / 3600.0      # (any order, ties in both)
    y = np.array([v for _, v in points])
    assert _same_drift(_drift_statistics(x, y), _scipy_drift(x, y))


@settings(max_examples=600, deadline=None)
@given(st.lists(st.floats(-20, 20) | st.sampled_from([2.999, 3.0, -3.0, 0.0]), min_size=1, max_size=60),
       st.data())
def test_median_surely_within_bounds_the_median_after_any_such_change(values, data):
    """Whatever is taken out (up to removed) and added (up to added), the median stays within."""
    slopes = np.sort(np.array(values))
    added, removed = data.draw(st.integers(0, 12)), data.draw(st.integers(0, 12))
    if not _median_surely_within(slopes, added, removed, 3.0):
        return
    kept = list(slopes)
    for _ in range(data.draw(st.integers(0, removed))):
        kept.pop(data.draw(st.integers(0, len(kept) - 1)))
    kept += data.draw(st.lists(st.floats(-1e9, 1e9) | st.sampled_from([-math.inf, math.inf]), max_size=added))
    assert kept and abs(np.median(np.sort(np.array(kept)))) < 3.0


def test_clock_kept_slopes_skip_only_windows_whose_slope_is_below_the_drift():
    """A detector that bounds the slope by the kept pair slopes answers as one that computes it afresh."""
    rng = random.Random(23)
    skips = []
    for _ in range(60):
        kept, fresh = ClockDetector("a", "b"), ClockDetector("a", "b")
        bound = kept._slope_surely_below
        kept._slope_surely_below = lambda: bound() and bool(skips.append(1)) is False
        level, slope = 20.0, rng.choice((0.0, 1.0, 2.0, 2.9, 4.0, -5.0, 12.0))
        every = rng.choice((60.0, 200.0, 600.0))
        for i in range(400):
            level += slope * every / 3600 + rng.choice((0.0, 0.0, rng.gauss(0, 0.05), rng.gauss(0, 0.5)))
            if rng.random() < 0.01:
                level += rng.choice((-8.0, 8.0))
            obs = latency(T0 + every * i + rng.choice((0, 0, 0, rng.random(), -every)), level,
                          lost=rng.choice((0, 0, 0, 0, 3500)))
            found = kept.observe(obs)
            fresh.slopes_kept = None
            assert found == fresh.observe(obs)
            assert kept.facts == fresh.facts
    assert len(skips) > 1000
    del kept._slope_surely_below
    copy = pickle.loads(pickle.dumps(kept))
    assert copy.slopes_kept is None and copy.floor_seen == kept.floor_seen


def test_poisson_tail_bounds_decide_as_scipy_does():
    from scipy.stats import poisson

    from pathwatch.models.significance import poisson_tail_below

    rng = random.Random(7)
    for _ in range(3000):
        mean = 10 ** rng.uniform(-2, 3)
        k = max(1, int(mean * rng.choice([0.5, 1, 1.5, 2, 3, 5, 10, 50]) + rng.randint(-3, 30)))
        alpha = rng.choice([1e-3, 1e-6, 1e-9])
        assert poisson_tail_below(k, mean, alpha) == bool(poisson.sf(k - 1, mean) < alpha), (k, mean, alpha)


@settings(max_examples=500, deadline=None)
@given(st.integers(1, 5000), st.floats(1e-6, 5000.0), st.sampled_from([1e-3, 1e-6, 1e-9]))
def test_poisson_tail_near_the_line_is_the_value_poisson_sf_computes(k, mean, alpha):
    """Where the bounds cannot tell, pdtrc at k − 1 is poisson.sf's own value, bit for bit."""
    from scipy.special import pdtrc
    from scipy.stats import poisson

    from pathwatch.models.significance import poisson_tail_below

    assert pdtrc(float(k - 1), mean) == poisson.sf(k - 1, mean)
    assert poisson_tail_below.__wrapped__(k, mean, alpha) == bool(poisson.sf(k - 1, mean) < alpha)


@settings(max_examples=500, deadline=None)
@given(st.integers(1, 200_000), st.data(), st.floats(1e-9, 1.0, exclude_max=True) | st.sampled_from([1e-6, 0.5]))
def test_binomial_tail_near_the_line_is_the_value_binom_sf_computes(n, data, p):
    """The ufunc tail_exceeds calls is binom.sf's own, bit for bit, for every valid count."""
    from scipy.stats import binom

    from pathwatch.models.significance import _binomial_sf

    k = data.draw(st.integers(1, n))
    assert _binomial_sf()(float(k - 1), float(n), p) == binom.sf(k - 1, n, p)
    # The tail itself as alpha (the line), where binom.sf is a reference: below ~1e-250 its
    # evaluation underflows to 0 while the tail is not (k=444, n=459, p=0.1875: ~1e-296).
    tail = float(binom.sf(k - 1, n, p))
    alpha = data.draw(st.sampled_from([1e-3, 1e-6, tail if tail > 1e-250 else 1e-9]))
    if 0.0 < alpha < 1.0:
        assert tail_exceeds(k, n, p, alpha) == bool(binom.sf(k - 1, n, p) > alpha)


def test_taking_bursts_out_only_lowers_loss_and_only_in_hours_of_five_or_more():
    """The loss detector's pre-check bounds the reference rate below by dropping every hour that lost
    at least 5 packets; that holds when what without_bursts changes is only such hours, lowered."""
    from pathwatch.models.detectors.loss import without_bursts

    rng = np.random.default_rng(8)
    for _ in range(300):
        n = int(rng.integers(2, 170))
        rate = 10 ** rng.uniform(-6, -3)
        bins = [(h, int(rng.poisson(36000 * rate)) + (int(rng.integers(50, 500)) if rng.random() < 0.03 else 0), 36000)
                for h in range(n)]
        cleaned = without_bursts(bins, 1e-6, 6, 1e-6)
        for (h, lost, sent), (h2, lost2, sent2) in zip(bins, cleaned):
            assert (h2, sent2) == (h, sent) and lost2 <= lost
            assert lost2 == lost or lost >= 5
