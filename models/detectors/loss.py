"""loss_step and rising_loss: packet loss that appears where there was none, as a step or a slope.

Latency results are summed into hourly bins of (lost, sent). A burst — an hour that loses far
more than the hours on either side of it typically do (Poisson test at ``burst_alpha``) — is a
one-off event (a queue overflowing, a reroute), neither a step nor a trend: for the analysis its
loss is taken as its neighbours' rate. Each completed hour, the recent bins are split where a
two-rate Poisson model fits best; when the loss after the split is far above
the path's reference rate (binomial test), two shapes compete by likelihood: a step (one
constant rate after some hour) and a ramp (a rate growing linearly from the reference after some
hour; a rise is dated from the first hour after the ramp's start that lost more than the
reference). Loss confined to the same hours of every day (none significant outside the busiest
``busy_slot_hours`` of the day) is busy-hour congestion — the diurnal detector's — and neither;
so is less than a day of loss in the hours that were lossy on a previous day, with the hours
between back at the reference (a step persists through the night), or in the busy hours of the
path's open diurnal saturation. Loss that comes with a higher delay floor (its lossy hours'
floor ``queue_floor_ms`` above the reference hours') is a queue overflowing — drop-tail loss
delays what gets through, a failing component drops without queueing — and is judged as a step
only once it has lasted ``queue_hours`` (a day: a busy hours' queue drains at night).
The one ahead by ``shape_margin`` log-likelihood names the kind — ``loss_step`` (after at
least ``step_hours``) or ``rising_loss``; until then the detector waits. A step's loss must be
spread over its samples: when far more of the big samples (``spread_min_packets``) lost nothing
than a steady rate leaves lossless, a few bursts carried it. The early hours of a slow rise can
look flat: a step whose loss keeps climbing (after ``rise_hours``, its second half more than
twice as lossy as its first, and a ramp ahead of any one or two constant rates by
``shape_margin``) becomes a ``rising_loss`` from the step's start. Both close when loss falls
back for ``recover_hours``.

The LAG-member signature is read from throughput runs: about one in k runs (the flows hashed onto
the failing member) retransmit heavily at a lower rate while the others stay clean, at any hour
of the day. When such runs make up between ``lag_min_frac`` and ``lag_max_frac`` of recent runs,
spread over the day and interleaved with the clean ones (a runs test: a block of degraded runs
in a row is a level change that came and went, not 1 in k; and the runs right beside them at
the clean rate: slow too, it is a drop), ``rising_loss`` opens with ``k`` estimated as 1 / fraction.
A loss step open on the path does not stop it: a step is every flow's loss and would slow every
run, so with most runs clean the latency probes were hashed onto the failing member, and the
step closes as having become the rising loss (dated from the step's start when that is earlier).
They must be more than the path's own outliers explain (a binomial test against its history),
or the runs that collapsed below ``lag_deep`` of the clean rate — what a flow on a failing member
does, and a clean path hardly ever — more than its own collapses explain (at least
``lag_collapse_rate``; ``lag_min_collapsed`` of them are enough). That finds a failing member
early, and on a path whose congestion often costs a run half its rate.

Most of the degraded runs must have collapsed: their median rate below ``lag_typical_depth`` of
the clean rate. A member that drops packets drops them whatever the flow's rate — backing off
does not make the loss go away, as it drains a congested queue — so every flow hashed onto it is
held at the loss-limited rate (about MSS / (RTT·√p), Mathis et al.), a small fraction of a clean
run's on a path of tens of ms and Gb/s even at p = 1e-4, and alike for all of them. What else
slows a run now and then keeps it a share of the rate: a burst of cross traffic leaves a TCP flow
its share of the bottleneck (and ends within hours), a loaded host paces its runs at most of
their rate. A chance cluster of such dips — several bursts in a few days, someone else's bursts
spoiling a run — can make up one in six runs of a window, interleaved with clean ones, but the
runs it slows keep a third of the clean rate or more.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from bisect import bisect_left, insort
from itertools import accumulate
from operator import itemgetter, truediv

import numpy as np
from statsmodels.sandbox.stats.runs import runstest_1samp

from pathwatch.contract.timefmt import from_epoch
from pathwatch.models.anomaly import Anomaly
from pathwatch.models.base import Detector, severity_for
from pathwatch.models.params import Params
from pathwatch.models.observe import LatencyObs, ThroughputObs
from pathwatch.models.significance import poisson_tail_below, tail_exceeds
from pathwatch.models.window import SortedWindow, median

DAY = 86400.0
_LOST, _SENT = itemgetter(1), itemgetter(2)   # fields of an hourly bin (hour, lost, sent)
_DEGRADED = itemgetter(1)                     # of a LAG-window run (t, degraded, bps, retransmits)


@dataclass(frozen=True)
class LossParams(Params):
    history_hours: int = 7 * 24     # hourly bins kept
    recent_hours: int = 48          # bins searched for the change
    min_reference: int = 24         # reference bins needed before judging
    rate_floor: float = 1e-6        # reference loss rate never taken as lower than this
    alpha: float = 1e-6             # binomial test level for "more loss than the reference"
    min_rate: float = 1e-4          # loss after the change must reach this (0.01 %)
    major_rate: float = 1e-3        # severity: loss at this rate (0.1 %) is major ...
    critical_rate: float = 1e-2     # ... and at this rate (1 %) critical; lower rates are warnings
    rise_hours: int = 24            # a slow rise is judged over at least this many hours
    shape_margin: float = 3.0       # log-likelihood lead the ramp or the step needs to name the shape
    step_hours: int = 6             # a flat elevated rate this long is a step
    step_flatness: float = 0.7      # a step's second half keeps at least this share of the first's rate
    step_min_lost: int = 20         # with at least this many packets lost
    spread_min_packets: int = 1000  # samples this big show whether a step's loss is spread over them
    recover_hours: int = 6          # bins back near the reference that close an episode
    burst_hours: int = 6            # hours on each side an hour's loss is compared with ...
    burst_alpha: float = 1e-6       # ... a burst: more loss than their typical rate explains at this level
    busy_slot_hours: int = 8        # loss only within this many hours of each day is busy-hour loss
    daily_days: int = 2             # loss confined to hours that were lossy on one of this many days before ...
    daily_slack_hours: int = 2      # ... (give or take this many hours), and back to the reference between, is
                                    # that day's pattern again: neither a step nor a rise ...
    daily_factor: float = 2.0       # ... losing up to this many times that day's rate (a load varies day to day)
    queue_floor_ms: float = 1.0     # loss in hours whose delay floor sits this far above the reference's ...
    queue_hours: int = 24           # ... is a queue overflowing until it has lasted this long (then judged as any)
    lag_runs: int = 48              # throughput runs in the LAG window
    lag_min_runs: int = 6           # degraded runs needed
    lag_min_frac: float = 0.08      # degraded fraction between these two
    lag_streak: int = 4             # this many degraded runs in a row is not a 1-in-k pattern
    lag_max_frac: float = 0.65      # (up to a 2-member LAG: half the runs, interleaved with clean ones)
    lag_collapse: float = 0.5        # degraded: a rate below this fraction of the clean median, or
    lag_retrans_factor: float = 10.0  # retransmits this many times the clean level ...
    lag_retrans_min: int = 50        # ... and at least this many, at a rate 2 x lag_rate_drop below
    lag_rate_drop: float = 0.15      # runs this far below the clean median are not clean
    lag_outlier_rate: float = 0.02   # degraded runs expected on a healthy path
    lag_deep: float = 0.15           # a run below this fraction of the clean rate collapsed (a flow on a
                                     # failing member); congestion rarely costs a run that much
    lag_collapse_rate: float = 0.005  # collapsed runs expected on a healthy path
    lag_typical_depth: float = 0.25  # the degraded runs' median rate below this fraction of the clean rate: a
                                     # member that drops packets pins its flows at the loss-limited rate; a burst
                                     # of cross traffic or a loaded host leaves a run a share of it
    lag_min_collapsed: int = 5       # collapsed runs needed when they alone make the signature
    lag_alpha: float = 1e-4
    lag_busy_share: float = 0.6      # more than this share inside one 6-hour slot of day = diurnal, not LAG
    lag_cluster_alpha: float = 1e-3  # degraded runs bunched in time this significantly (runs test) are not 1 in k


def _llr_split(bins: list[tuple[int, int, int]], p0: float) -> tuple[int, float]:
    """Index where the bins split best into a reference-rate part and a constant-rate part after it."""
    best, best_score = len(bins) - 1, -math.inf
    lost_after = sent_after = 0
    log = math.log
    for i, (_, lost, sent) in zip(range(len(bins) - 1, -1, -1), reversed(bins)):
        lost_after += lost
        sent_after += sent
        if sent_after == 0 or lost_after == 0:
            continue
        rate = lost_after / sent_after
        if rate <= p0:
            continue
        score = lost_after * log(rate / p0) - sent_after * (rate - p0)
        if score > best_score:
            best, best_score = i, score
    return best, best_score


def _highest_tail_rate(bins: list[tuple[int, int, int]]) -> float:
    """The highest loss rate over the bins from any one of them to the last (inf when some sent nothing).

    >>> _highest_tail_rate([(0, 5, 100), (1, 0, 100), (2, 1, 100)])
    0.02
    """
    lost_after = accumulate(map(_LOST, reversed(bins)))
    sent_after = accumulate(map(_SENT, reversed(bins)))
    try:
        return max(map(truediv, lost_after, sent_after))
    except ZeroDivisionError:
        return math.inf


def _rates(lost: list[int], sent: list[int]) -> list[float]:
    """Each hour's loss rate (0 where it sent nothing).

    >>> _rates([1, 0, 3], [4, 0, 6])
    [0.25, 0.0, 0.5]
    """
    try:
        return list(map(truediv, lost, sent))
    except ZeroDivisionError:
        return [lo / se if se else 0.0 for lo, se in zip(lost, sent)]


def _rate(hour_bin: tuple[int, int, int]) -> float:
    """An hour's loss rate (0 when it sent nothing), as :func:`_rates` computes it."""
    return hour_bin[1] / hour_bin[2] if hour_bin[2] else 0.0


def without_bursts(bins: list[tuple[int, int, int]], floor: float, side: int, alpha: float,
                   ordered_rates: list[float] | None = None, memo: dict | None = None,
                   first: int = 0, lossy: Iterable[int] | None = None) -> list[tuple[int, int, int]]:
    """The bins with each burst's loss replaced by what its quieter side's rate predicts.

    A burst is an hour whose loss is improbable (Poisson upper tail below ``alpha``) at the larger
    of the median rates of the ``side`` hours before it and the ``side`` hours after it (at least
    ``floor``). A step's first hours are not bursts once an hour follows them; a ramp's hours
    are not, as each has neighbours at its rate. A burst's loss becomes the smaller of the two
    rates' (at least ``floor``): a burst just before a step, refilled at the step's rate, would
    read as loss rising towards it. ``ordered_rates``, when the caller keeps them,
    are the bins' rates (:func:`_rate`) in sorted order; ``memo`` keeps the neighbours' rates of
    an hour (:func:`_neighbour_rates`) by its place ``first + i`` in a series that only grows at
    its end, and how many neighbours it has on each side, for later calls on the same series,
    with the last ``floor`` and ``alpha`` it was tested at and the answer (the same hour at the
    same floor is the same test: the reference's hours are tested again every hour). ``lossy``,
    when the caller keeps them, are the indices (ascending) of at least the bins losing 5 or more:
    only those are looked at.

    >>> bins = [(h, 0, 36000) for h in range(10)] + [(10, 400, 36000)] + [(h, 1, 36000) for h in range(11, 20)]
    >>> [b[1] for b in without_bursts(bins, 1e-5, 6, 1e-6)][8:13]
    [0, 0, 0, 1, 1]
    >>> step = [(h, 0, 36000) for h in range(10)] + [(h, 20, 36000) for h in range(10, 13)]
    >>> [b[1] for b in without_bursts(step, 1e-5, 6, 1e-6)][9:]
    [0, 20, 20, 0]
    """
    out = None
    for i, lost in bursts(bins, floor, side, alpha, ordered_rates, memo, first, lossy):
        if out is None:
            out = list(bins)
        out[i] = (bins[i][0], lost, bins[i][2])
    return bins if out is None else out


def bursts(bins: list[tuple[int, int, int]], floor: float, side: int, alpha: float,
           ordered_rates: list[float] | None = None, memo: dict | None = None,
           first: int = 0, lossy: Iterable[int] | None = None) -> Iterator[tuple[int, int]]:
    """(index, the loss its quieter side's rate predicts) of each burst in ``bins``, in order: what
    :func:`without_bursts` replaces (the same arguments).

    >>> bins = [(h, 0, 36000) for h in range(10)] + [(10, 400, 36000)] + [(h, 1, 36000) for h in range(11, 20)]
    >>> list(bursts(bins, 1e-5, 6, 1e-6))
    [(10, 0)]
    """
    if len(bins) < 2:
        return
    if memo is None:
        memo = {}                           # (this call's own: nothing kept for later calls)
    bar = None
    last = len(bins) - 1
    for i in range(len(bins)) if lossy is None else lossy:
        _, lost, sent = bins[i]
        if lost < 5:
            continue                        # (hours losing fewer than 5 are never bursts)
        if bar is None:
            if ordered_rates is None:
                ordered_rates = sorted(_rates(list(map(_LOST, bins)), list(map(_SENT, bins))))
            bar = 3 * max(_median_of_sorted(ordered_rates), floor)
        # cheap screen: only an hour well above the series' typical rate can be a burst
        if lost <= bar * sent:
            continue
        key = (first + i, i if i < side else side, last - i if last - i < side else side)
        kept = memo.get(key)
        if kept is None or kept[2] != floor or kept[3] != alpha:
            rates = _neighbour_rates(bins, i, side) if kept is None else kept[:2]
            burst = poisson_tail_below(lost, max(rates[1], floor) * sent, alpha)
            kept = memo[key] = (*rates, floor, alpha, burst)
        quieter, _, _, _, burst = kept
        if burst:
            yield i, int(round(max(quieter, floor) * sent))


def _neighbour_rates(bins: list[tuple[int, int, int]], i: int, side: int) -> tuple[float, float]:
    """(smaller, larger) of the median loss rates of the ``side`` hours before and after ``bins[i]``.

    A side without hours is left out; with neither, both are 0.

    >>> _neighbour_rates([(0, 1, 100), (1, 50, 100), (2, 3, 100), (3, 5, 100)], 1, 2)
    (0.01, 0.04)
    >>> _neighbour_rates([(0, 1, 100), (1, 50, 100)], 1, 2)
    (0.01, 0.01)
    """
    before = [lo / se if se else 0.0 for _, lo, se in bins[max(0, i - side): i]]     # (rates, as _rate)
    after = [lo / se if se else 0.0 for _, lo, se in bins[i + 1: i + 1 + side]]
    sides = [median(rates) for rates in (before, after) if rates]
    return (min(sides), max(sides)) if sides else (0.0, 0.0)


def _median_of_sorted(ordered: list[float]) -> float:
    """:func:`~pathwatch.models.window.median` of values already in sorted order."""
    n = len(ordered)
    return ordered[n // 2] if n % 2 else (ordered[n // 2 - 1] + ordered[n // 2]) / 2


def _llr_step(after: list[tuple[int, int, int]], p0: float) -> float:
    """Log-likelihood gain of one constant rate over the reference rate on ``after``."""
    lost = sum(b[1] for b in after)
    sent = sum(b[2] for b in after)
    rate = lost / sent
    return lost * math.log(rate / p0) - sent * (rate - p0) if rate > p0 else 0.0


def _llr_two_levels(bins: list[tuple[int, int, int]], p0: float) -> float:
    """Best log-likelihood gain over ``p0`` of one constant rate on ``bins``, or of two: one before
    some bin and another from it (each over at least two bins).

    >>> flat = [(h, 10, 10000) for h in range(8)]
    >>> round(_llr_two_levels(flat, 1e-4), 1) == round(_llr_step(flat, 1e-4), 1)
    True
    >>> _llr_two_levels(flat[:4] + [(h, 40, 10000) for h in range(4, 8)], 1e-4) > _llr_step(flat, 1e-4)
    True
    """
    lost = np.cumsum([b[1] for b in bins], dtype=float)
    sent = np.cumsum([b[2] for b in bins], dtype=float)
    best = _llr_step(bins, p0)
    if len(bins) < 4:
        return best
    split = slice(1, len(bins) - 2)           # the first part ends at bin 1 .. len - 3
    before_lost, before_sent = lost[split], sent[split]
    gains = _gain_over(before_lost, before_sent, p0) + _gain_over(lost[-1] - before_lost, sent[-1] - before_sent, p0)
    return max(best, float(gains.max()))


def _gain_over(lost: np.ndarray, sent: np.ndarray, p0: float) -> np.ndarray:
    """Log-likelihood gain of each (lost, sent)'s own rate over ``p0`` (0 where it is no higher)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = lost / sent
        gain = lost * np.log(rate / p0) - sent * (rate - p0)
    return np.where((sent > 0) & (rate > p0), gain, 0.0)


def _llr_ramp(bins: list[tuple[int, int, int]], p0: float) -> tuple[float, float, float]:
    """Best (gain, start time, slope per second) of a rate rising linearly from ``p0`` after some bin.

    The rate in bin i is p0 + b·max(0, t_i − t0). Every other bin as the start and a log-spaced
    grid of slopes (``_SLOPES``, a factor 1.4 apart) are tried at once; the best pair's gain is
    close to the maximum likelihood's, which is all the step-or-ramp comparison needs.
    """
    hours = np.array([b[0] for b in bins], dtype=float)
    lost = np.array([b[1] for b in bins], dtype=float)
    sent = np.array([b[2] for b in bins], dtype=float)
    starts = hours[:-3:2]
    if starts.size == 0:
        return 0.0, hours[0] * 3600.0, 0.0
    x = np.maximum(0.0, hours[None, :] + 0.5 - starts[:, None]) * 3600.0          # (start, bin)
    rate = p0 + _SLOPES[None, :, None] * x[:, None, :]                              # (start, slope, bin)
    gain = (lost * np.log(rate / p0) - sent * (rate - p0)).sum(axis=2)
    i, j = np.unravel_index(int(np.argmax(gain)), gain.shape)
    if gain[i, j] <= 0:
        return 0.0, hours[0] * 3600.0, 0.0
    return float(gain[i, j]), float(starts[i]) * 3600.0, float(_SLOPES[j])


def first_loss_from(bins: list[tuple[int, int, int]], start_s: float, p0: float) -> float:
    """The first bin from ``start_s`` on that lost more than the reference rate ``p0`` would: where a
    rise shows in the data. A ramp's fitted start is a line extrapolated back, and a rise that
    begins with a jump (a failing member's first share) extrapolates to an hour that lost nothing.

    >>> first_loss_from([(5, 0, 200), (6, 1, 101), (7, 0, 100)], 5 * 3600.0, 0.0015) / 3600
    6.0
    """
    for hour, lost, sent in bins:
        if hour * 3600.0 >= start_s and lost > p0 * sent:
            return hour * 3600.0
    return start_s


# Loss-rate slopes per second tried by _llr_ramp: from 0.0001 %/day to 100 %/day.
_SLOPES = np.geomspace(1e-6 / DAY, 1.0 / DAY, 41)


def _beside_degraded(runs: list[tuple[float, bool, float, int]]) -> list[float]:
    """The rates of the runs that are not degraded and come right before or after a degraded one.

    >>> _beside_degraded([(0, False, 9.0, 0), (1, True, 1.0, 0), (2, False, 8.0, 0), (3, False, 7.0, 0)])
    [9.0, 8.0]
    """
    beside = set()
    for i, run in enumerate(runs):
        if run[1]:
            beside.update(j for j in (i - 1, i + 1) if 0 <= j < len(runs) and not runs[j][1])
    return [runs[j][2] for j in sorted(beside)]


def _more_lost_than(hours: list[tuple[tuple[int, int, int], float]], alpha: float) -> bool:
    """Whether the bins of ``hours`` (each with the loss rate it is allowed) lost significantly more
    than their allowed rates explain (Poisson test at ``alpha``); False for no bins.

    >>> _more_lost_than([((0, 40, 10000), 1e-3), ((1, 30, 10000), 1e-3)], 1e-6), _more_lost_than([((0, 12, 10000), 1e-3)], 1e-6)
    (True, False)
    """
    lost = sum(b[1] for b, _ in hours)
    return lost > 0 and poisson_tail_below(lost, sum(b[2] * rate for b, rate in hours), alpha)


def _reference_sums(bins: list[tuple[int, int, int]]) -> list[int]:
    """[lost, sent, lost in the hours losing at least 5] summed over ``bins``.

    >>> _reference_sums([(0, 1, 100), (1, 7, 100)])
    [8, 200, 7]
    """
    return [sum(map(_LOST, bins)), sum(map(_SENT, bins)), sum(lost for _, lost, _ in bins if lost >= 5)]


class _CleanRuns:
    """The clean runs' rates and retransmits, each a :class:`SortedWindow` mirroring ``clean``."""

    __slots__ = ("bps", "retransmits")

    def __init__(self, clean: deque):
        self.bps = SortedWindow(clean.maxlen, (b for b, _ in clean))
        self.retransmits = SortedWindow(clean.maxlen, (r for _, r in clean))


class LossDetector(Detector):
    name = "loss"
    kinds = ("rising_loss", "loss_step")
    reads = (LatencyObs, ThroughputObs)
    Params = LossParams

    def __init__(self, source, destination, params=None, context=None):
        super().__init__(source, destination, params, context)
        self.bins: deque[tuple[int, int, int]] = deque(maxlen=self.p.history_hours)
        # [lost, sent, lost in hours losing at least 5] summed over the bins older than the
        # recent_hours (the reference), kept as bins arrive and leave: integers, so exact
        self.reference_sums: list[int] = [0, 0, 0]
        # The loss rates of the reference's bins and of the recent_hours' in sorted order (their
        # medians, for without_bursts), kept as bins arrive and leave
        self.reference_rates: list[float] = []
        self.recent_rates = SortedWindow(self.p.recent_hours)
        self.bins_seen = 0      # bins ever appended: bins[i] is the (bins_seen - len(bins) + i)-th
        # The numbers (as bins_seen counts them) of the bins that lost 5 or more, oldest first: the
        # only ones without_bursts looks at (a cache: not pickled)
        self.lossy: deque[int] = deque()
        # No lower than the recent hours' highest tail rate (_highest_tail_rate): that rate when
        # _judge last took it, raised by each hour since (a tail with it is no higher than the old
        # tail's rate and the hour's), so an hour whose bound is below the bar needs no lists
        self.tail_bound = math.inf
        self.neighbours: dict = {}    # without_bursts' memo for these bins (a cache: not pickled)
        self.current: list[int] | None = None   # [hour, lost, sent]
        # Per hour, of samples of at least spread_min_packets: [hour, samples, lossless ones, packets]
        self.spread: deque[tuple[int, int, int, int]] = deque(maxlen=self.p.history_hours)
        self.current_spread: list[int] | None = None
        # Per hour, the lowest one-way delay (or RTT) of its samples: (hour, floor ms), and this hour's
        self.floors: deque[tuple[int, float]] = deque(maxlen=self.p.history_hours)
        self.current_floor: float = math.inf
        self.reference_rate: float | None = None  # frozen while an episode is open
        self.loss_kind: str | None = None
        self.quiet_hours = 0
        self.clean: deque[tuple[float, int]] = deque(maxlen=24)   # (bps, retransmits) of clean runs
        self.clean_sorted = _CleanRuns(self.clean)     # ... each in sorted order, for their medians
        self.runs: deque[tuple[float, bool, float, int]] = deque(maxlen=self.p.lag_runs)
        self.lag_open = False
        self.history_runs = self.history_degraded = 0   # runs older than the LAG window
        self.history_collapsed = 0                      # ... of which collapsed (lag_deep)

    def __getstate__(self) -> dict:
        return {key: value for key, value in self.__dict__.items() if key not in ("neighbours", "lossy")}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self.neighbours = {}
        first = self.bins_seen - len(self.bins)
        self.lossy = deque(first + i for i, hour_bin in enumerate(self.bins) if hour_bin[1] >= 5)

    def observe(self, obs) -> list[Anomaly]:
        if isinstance(obs, LatencyObs):
            return self._latency(obs)
        return self._throughput(obs)

    def handlers(self) -> dict[type, object]:
        return {LatencyObs: self._latency, ThroughputObs: self._throughput}

    # ------------------------------------------------------------------ latency loss
    def _latency(self, obs: LatencyObs) -> list[Anomaly]:
        lost, sent = obs.lost, obs.sent
        if not obs.ok or sent == 0 or lost >= sent:
            return []
        hour = int(obs.t // 3600)
        out: list[Anomaly] = []
        current = self.current
        if current is not None and hour != current[0]:
            self._add_bin(tuple(current))
            if self.current_spread is not None:
                self.spread.append(tuple(self.current_spread))
            if self.current_floor < math.inf:
                self.floors.append((current[0], self.current_floor))
            out = self._judge(obs.t)
            self.current = self.current_spread = current = None
            self.current_floor = math.inf
        if current is None:
            self.current = current = [hour, 0, 0]
        current[1] += lost
        current[2] += sent
        floor = obs.delay_min_ms
        if floor is not None and floor < self.current_floor:
            self.current_floor = floor
        if sent >= self.p.spread_min_packets:
            spread = self.current_spread
            if spread is None:
                self.current_spread = spread = [hour, 0, 0, 0]
            spread[1] += 1
            spread[2] += lost == 0
            spread[3] += sent
        return out

    def _add_bin(self, hour_bin: tuple[int, int, int]) -> None:
        """Append a completed hour to ``bins``, moving the reference's sums and ordered rates with
        the bins that leave the history and the one that passes from the recent hours into the
        reference."""
        bins, sums, recent_hours = self.bins, self.reference_sums, self.p.recent_hours
        if len(bins) == bins.maxlen and len(bins) > recent_hours:
            _, lost, sent = leaving = bins[0]
            sums[0] -= lost
            sums[1] -= sent
            if lost >= 5:
                sums[2] -= lost
            rates = self.reference_rates
            del rates[bisect_left(rates, _rate(leaving))]
        bins.append(hour_bin)
        self.bins_seen += 1
        _, lost, sent = hour_bin
        lossy = self.lossy
        if lost >= 5:
            lossy.append(self.bins_seen - 1)
        while lossy and lossy[0] < self.bins_seen - len(bins):
            lossy.popleft()                # (it left the history)
        rate = lost / sent if sent else math.inf      # (a tail that sent nothing: inf, as there)
        if rate > self.tail_bound:
            self.tail_bound = rate
        self.recent_rates.append(_rate(hour_bin))
        if len(bins) > recent_hours:
            _, lost, sent = entering = bins[-recent_hours - 1]
            sums[0] += lost
            sums[1] += sent
            if lost >= 5:
                sums[2] += lost
            insort(self.reference_rates, _rate(entering))

    def _judge(self, now: float) -> list[Anomaly]:
        p = self.p
        if self.loss_kind is None and self._tail_too_low():
            return []                  # (the first test below, decided on the kept bound alone)
        bins = list(self.bins)
        if self.loss_kind is not None:
            return self._maybe_recovered(bins, now)
        recent = bins[-p.recent_hours:]
        reference = bins[: -p.recent_hours] if len(bins) > p.recent_hours else []
        if len(reference) < p.min_reference:
            if len(bins) < p.min_reference + 6:
                return []
            reference, recent = bins[: p.min_reference], bins[p.min_reference:]
            ref_lost, ref_sent, maybe_bursts = _reference_sums(reference)
            ref_rates = recent_rates = None
        else:
            ref_lost, ref_sent, maybe_bursts = self.reference_sums
            ref_rates = self.reference_rates          # (the rates of these bins, kept in order)
            recent_rates = self.recent_rates.sorted if not self.recent_rates.nans else None
        # Bursts (hours losing at least 5) taken out of the reference leave at least this rate: a
        # lower bound of p0, so a tail rate below the bar it sets is below the real bar too.
        p0_low = max((ref_lost - maybe_bursts) / ref_sent if ref_sent else 0.0, p.rate_floor)
        highest = self.tail_bound = _highest_tail_rate(recent)
        if highest < max(p.min_rate, 3 * p0_low) * (1 - 1e-9):
            return []                  # whatever the split, the loss after it is too low (checked below;
                                       # taking bursts out of recent only lowers it)
        first, lossy = self._numbered(bins)
        if maybe_bursts:             # (the reference's loss without its bursts': only its sum is read)
            for i, lost in bursts(reference, p.rate_floor, p.burst_hours, p.burst_alpha, ref_rates,
                                  self._neighbours_memo(), first, [i for i in lossy if i < len(reference)]):
                ref_lost += lost - reference[i][1]
        p0 = max(ref_lost / ref_sent if ref_sent else 0.0, p.rate_floor)
        if highest < max(p.min_rate, 3 * p0) * (1 - 1e-9):
            return []
        skipped = len(bins) - len(recent)
        recent = without_bursts(recent, p0, p.burst_hours, p.burst_alpha, recent_rates,
                                self._neighbours_memo(), self.bins_seen - len(recent),
                                [i - skipped for i in lossy if i >= skipped])
        if _highest_tail_rate(recent) < max(p.min_rate, 3 * p0):
            return []                  # (every tail's rate, as computed below for the one after the split,
                                       # is below the bar: whatever the split, the test below returns)
        split, _ = _llr_split(recent, p0)
        after = recent[split:]
        lost = sum(map(_LOST, after))
        sent = sum(map(_SENT, after))
        if sent == 0 or lost / sent < max(p.min_rate, 3 * p0) or len(after) < 4 or tail_exceeds(lost, sent, p0, p.alpha):
            return []
        half = len(after) // 2
        lost1, sent1 = sum(map(_LOST, after[:half])), sum(map(_SENT, after[:half]))
        lost2, sent2 = sum(map(_LOST, after[half:])), sum(map(_SENT, after[half:]))
        rate1, rate2 = lost1 / sent1, lost2 / sent2
        # What each shape needs besides winning the likelihood race; when neither can win, the
        # race (the costly ramp fit) is not run.
        could_rise = rate2 > max(rate1, 2 * p0) and len(after) >= p.rise_hours
        # A step is sustained: the typical hour after it (not a burst in one hour) carries the loss,
        # and the second half is as lossy as the first.
        typical = median(b[1] / b[2] for b in after if b[2])
        sustained = (typical >= max(p.min_rate, 3 * p0) and rate2 >= p.step_flatness * rate1
                     and not self._carried_by_few_samples(after, lost / sent))
        could_step = sustained and len(after) >= p.step_hours and lost >= p.step_min_lost
        if not (could_rise or could_step) or self._busy_hours_only(after, p0) or self._daily_pattern(bins, after, p0):
            return []
        step_llr = _llr_step(after, p0)
        ramp_llr, ramp_start, slope = _llr_ramp(recent, p0)
        start = after[0][0] * 3600.0
        evidence = {
            "reference_loss_pct": round(100 * p0, 5), "loss_pct": round(100 * lost / sent, 4),
            "first_half_loss_pct": round(100 * rate1, 4), "second_half_loss_pct": round(100 * rate2, 4),
            "hours": len(after), "packets_lost": lost, "packets_sent": sent,
            "step_llr": round(step_llr, 1), "ramp_llr": round(ramp_llr, 1),
        }
        if ramp_llr - step_llr >= p.shape_margin and slope > 0 and could_rise:
            self.loss_kind, self.reference_rate = "rising_loss", p0
            per_day = slope * DAY
            evidence["slope_pct_per_day"] = round(100 * per_day, 4)
            return self.open(
                "rising_loss", start=first_loss_from(recent, ramp_start, p0), at=now,
                severity=severity_for(rate2, 0.0, self.p.major_rate, self.p.critical_rate),
                score=min(1.0, 0.5 + (ramp_llr - step_llr) / 20),
                summary=f"Loss rising slowly: {100 * rate1:.3f} % → {100 * rate2:.3f} % over {len(after)} h "
                        f"(≈ {100 * per_day:+.3f} %/day) from a {100 * p0:.4f} % reference.",
                evidence=evidence,
            )
        if step_llr - ramp_llr >= p.shape_margin and could_step:
            if len(after) < p.queue_hours and self._queued(after):
                return []
            self.loss_kind, self.reference_rate = "loss_step", p0
            rate = lost / sent
            return self.open(
                "loss_step", start=start, at=now, severity=severity_for(rate, 0.0, self.p.major_rate, self.p.critical_rate),
                score=min(1.0, 0.5 + (step_llr - ramp_llr) / 20),
                summary=f"Loss stepped from {100 * p0:.4f} % to a steady {100 * rate:.3f} % at {from_epoch(start)}.",
                evidence=evidence,
            )
        return []

    def _queued(self, after: list[tuple[int, int, int]]) -> bool:
        """Whether the hours since the change that lost packets also delayed them: their typical
        delay floor ``queue_floor_ms`` or more above the reference hours' (the median of each).

        Drop-tail loss is a full queue overflowing, and a full queue delays every packet that gets
        through it; a failing optic, a bad cable or a policer drops without queueing anything.
        """
        floors = dict(self.floors)
        lossy = [floors[hour] for hour, lost, _ in after if lost and hour in floors]
        first = after[0][0]
        before = [floor for hour, floor in self.floors if hour < first]
        if not lossy or not before:
            return False
        return median(lossy) - median(before) >= self.p.queue_floor_ms

    def _tail_too_low(self) -> bool:
        """Whether :meth:`_judge` would stop at its first test, its highest tail rate too low for
        the bar set by the reference kept as bins move, as the kept bound already shows."""
        p = self.p
        if len(self.bins) - p.recent_hours < p.min_reference:
            return False               # (the first days: another reference, no shortcut)
        ref_lost, ref_sent, maybe_bursts = self.reference_sums
        p0_low = max((ref_lost - maybe_bursts) / ref_sent if ref_sent else 0.0, p.rate_floor)
        return self.tail_bound < max(p.min_rate, 3 * p0_low) * (1 - 1e-9)

    def _numbered(self, bins: list[tuple[int, int, int]]) -> tuple[int, list[int]]:
        """The number of ``bins``' first bin in the path's series (``bins`` being the history) and
        the lossy bins' places in ``bins``: what :func:`bursts` and :func:`without_bursts` memoise by."""
        first = self.bins_seen - len(bins)
        return first, [n - first for n in self.lossy]

    def _neighbours_memo(self) -> dict:
        """without_bursts' memo, rid of the hours that left the history when it has grown large."""
        memo = self.neighbours
        if len(memo) > 4 * self.p.history_hours:
            oldest = self.bins_seen - len(self.bins)
            self.neighbours = memo = {key: value for key, value in memo.items() if key[0] >= oldest}
        return memo

    def _carried_by_few_samples(self, after: list[tuple[int, int, int]], rate: float) -> bool:
        """Whether far more of the big samples in ``after``'s hours lost nothing than a steady ``rate``
        leaves lossless (binomial test at ``alpha``): bursts in a few samples, not a step.

        A sample of n packets loses none with probability (1 − rate)^n; at 0.25 % loss a sample
        of 6,000 packets is almost never lossless, so 32 lossless samples of 36 are a few bursts.
        The first hour is left out: the change happened within it, and its samples from before
        lost nothing (at 0.8 % one such sample alone read as bursts, and a step waited a day).
        """
        hours = {b[0] for b in after[1:]}
        counts = [entry[1:] for entry in self.spread if entry[0] in hours]
        samples = sum(n for n, _, _ in counts)
        if samples < 6 or not 0.0 < rate < 1.0:
            return False
        lossless = sum(clean for _, clean, _ in counts)
        per_sample = sum(packets for _, _, packets in counts) / samples
        steady = math.exp(per_sample * math.log1p(-rate))
        return lossless >= 1 and not tail_exceeds(lossless, samples, steady, self.p.alpha)

    def _busy_hours_only(self, after: list[tuple[int, int, int]], p0: float) -> bool:
        """Whether the loss after the change stays within the same few hours of each day: outside the
        busiest ``busy_slot_hours`` of the day it is not significantly above the reference."""
        if len(after) < 24:
            return False
        lost_by_hour, sent_by_hour = [0] * 24, [0] * 24
        for hour, lost, sent in after:
            lost_by_hour[hour % 24] += lost
            sent_by_hour[hour % 24] += sent
        width = self.p.busy_slot_hours
        start = max(range(24), key=lambda s: sum(lost_by_hour[(s + i) % 24] for i in range(width)))
        inside = {(start + i) % 24 for i in range(width)}
        lost_out = sum(v for h, v in enumerate(lost_by_hour) if h not in inside)
        sent_out = sum(v for h, v in enumerate(sent_by_hour) if h not in inside)
        return sent_out > 0 and (lost_out < 1 or tail_exceeds(lost_out, sent_out, p0, self.p.alpha))

    def _daily_pattern(self, bins: list[tuple[int, int, int]], after: list[tuple[int, int, int]], p0: float) -> bool:
        """Whether the loss since the change (less than a day of it) is a daily pattern: no more than
        ``daily_factor`` times what the same hours lost on one of the ``daily_days`` days before
        (those hours shifted by up to ``daily_slack_hours``, all by the same) explains (Poisson test
        at ``alpha``), none significant in hours that were clean that day, that day lossy for more
        than an hour (at ``daily_factor`` times ``p0`` and more, significantly: a burst is one hour)
        and back near the reference ``p0`` (below ``daily_factor`` times it) in the hours between its
        loss and today's. A step persists through the night; a busy hour's loss follows the clock. Also
        loss within the busy hours of the path's open diurnal saturation. The hours between are read
        with their bursts' loss taken as their neighbours' rate (:func:`without_bursts`): a burst one
        night between two days' busy hours is no step persisting through it (a busy hour's loss,
        beside quiet hours, may read as a burst: the lossy hours of that day are read as they were)."""
        p = self.p
        if not after or len(after) >= 24:
            return False               # (a day of it or more: _busy_hours_only's to judge)
        first, last, slack = after[0][0], after[-1][0], p.daily_slack_hours
        if self.context.busy.covers(first * 3600.0, (last + 1) * 3600.0, slack * 3600.0):
            return True
        by_hour = {b[0]: b for b in bins}
        calm = without_bursts(bins, p0, p.burst_hours, p.burst_alpha, None, self._neighbours_memo(),
                              *self._numbered(bins))
        calm_by_hour = {b[0]: b for b in calm}
        for days in range(1, p.daily_days + 1):
            back = 24 * days
            then = {h: b for h in range(first - back - slack, last - back + slack + 1)
                    if (b := by_hour.get(h)) is not None and b[2]}
            bar = p.daily_factor * p0      # (an hour losing at twice the reference's rate, ...)
            lossy = [b for b in then.values() if b[1] >= bar * b[2]]
            if len(lossy) < 2 or tail_exceeds(sum(map(_LOST, lossy)), sum(map(_SENT, lossy)), p0, p.alpha):
                continue               # not lossy those hours that day (one hour is a burst): nothing to repeat
            last_lossy = lossy[-1][0]
            gap = [calm_by_hour[h] for h in range(last_lossy + slack + 1, first - slack) if h in calm_by_hour]
            if not gap or sum(map(_LOST, gap)) >= bar * sum(map(_SENT, gap)):
                continue               # no return to (near) the reference between the two
            for shift in range(-slack, slack + 1):          # the same hours, that day's a little earlier or later
                rates = [then[h][1] / then[h][2] if h in then else 0.0 for h in (b[0] - back + shift for b in after)]
                # no more lost than those hours did that day (give or take daily_factor), neither in the
                # hours that were lossy then nor, apart (a burst's allowance must not cover them), the others
                if not any(_more_lost_than([(b, max(p0, p.daily_factor * rate)) for b, rate in zip(after, rates)
                                            if (rate >= bar) is lossy], p.alpha) for lossy in (True, False)):
                    return True
        return False

    def _maybe_recovered(self, bins: list, now: float) -> list[Anomaly]:
        last = bins[-1]
        rate = last[1] / last[2] if last[2] else 0.0
        threshold = max(3 * (self.reference_rate or 0.0), self.p.min_rate / 2)
        self.quiet_hours = self.quiet_hours + 1 if rate <= threshold else 0
        if self.quiet_hours < self.p.recover_hours:
            return self._grow(bins, now)
        kind, self.loss_kind, self.quiet_hours = self.loss_kind, None, 0
        if kind == "loss_step":
            self.runs.clear()       # runs degraded by the step are no evidence of one bad LAG member
        if self.episodes.get(kind) is None or (kind == "rising_loss" and self.lag_open):
            return []                            # nothing open, or the LAG signature still holds it
        return self.close(kind, now - self.p.recover_hours * 3600.0, {"recovered_loss_pct": round(100 * rate, 5)})

    def _grow(self, bins: list, now: float) -> list[Anomaly]:
        """Re-emit the open loss episode when the last day's loss reaches a higher severity."""
        kind = self.loss_kind
        if kind == "loss_step" and kind in self.episodes:
            became = self._step_still_rising(bins, now)
            if became:
                return became
        day = bins[-24:]
        sent = sum(b[2] for b in day)
        if kind not in self.episodes or not sent:
            return []
        rate = sum(b[1] for b in day) / sent
        current = self.episodes[kind]
        return self.grow(kind, severity=severity_for(rate, 0.0, self.p.major_rate, self.p.critical_rate), score=current.score,
                         summary=f"{current.summary} Loss over the last day: {100 * rate:.3f} %.",
                         evidence={**current.evidence, "last_day_loss_pct": round(100 * rate, 4)})

    def _step_still_rising(self, bins: list, now: float) -> list[Anomaly]:
        """Close the open step and open a rising loss from its start when its loss keeps climbing.

        The first hours of a slow rise can be flat enough to be named a step. Once the step has
        lasted ``rise_hours``, its second half more than twice as lossy as its first and a ramp from
        the reference ahead of one or two constant rates (a second step) by ``shape_margin``, the
        loss is rising.
        """
        p = self.p
        step = self.episodes["loss_step"]
        first_hour = int(step.start // 3600)
        since = [b for b in bins if b[0] >= first_hour]
        if len(since) < p.rise_hours:
            return []
        half = len(since) // 2
        lost1, sent1 = sum(map(_LOST, since[:half])), sum(map(_SENT, since[:half]))
        lost2, sent2 = sum(map(_LOST, since[half:])), sum(map(_SENT, since[half:]))
        if not (sent1 and sent2) or lost2 / sent2 <= 2 * lost1 / sent1:
            return []
        p0 = max(self.reference_rate or 0.0, p.rate_floor)
        ramp_llr, _, slope = _llr_ramp(since, p0)
        levels_llr = _llr_two_levels(since, p0)
        if ramp_llr - levels_llr < p.shape_margin or slope <= 0:
            return []
        rate1, rate2, per_day = lost1 / sent1, lost2 / sent2, slope * DAY
        self.loss_kind = "rising_loss"
        # The rise comes out before the step closes: a ticket system holding the step's ticket
        # adds the rise to it as its cause rather than resolving it and opening another.
        return self.open(
            "rising_loss", start=step.start, at=now, severity=severity_for(rate2, 0.0, self.p.major_rate, self.p.critical_rate),
            score=min(1.0, 0.5 + (ramp_llr - levels_llr) / 20),
            summary=f"Loss still rising since it stepped up at {from_epoch(step.start)}: {100 * rate1:.3f} % → "
                    f"{100 * rate2:.3f} % over {len(since)} h (≈ {100 * per_day:+.3f} %/day) "
                    f"from a {100 * p0:.4f} % reference.",
            evidence={"reference_loss_pct": round(100 * p0, 5), "first_half_loss_pct": round(100 * rate1, 4),
                      "second_half_loss_pct": round(100 * rate2, 4), "hours": len(since),
                      "ramp_llr": round(ramp_llr, 1), "levels_llr": round(levels_llr, 1),
                      "slope_pct_per_day": round(100 * per_day, 4), "was": "loss_step"},
        ) + self.close("loss_step", now, {"became": "rising_loss"})

    # ------------------------------------------------------------------ LAG signature
    def _throughput(self, obs: ThroughputObs) -> list[Anomaly]:
        p = self.p
        if not obs.ok or obs.udp or not obs.bps or obs.retransmits is None or obs.stall_s >= self.context.p.stall_s:
            return []                      # stalled starts belong to the MTU detector
        if len(self.clean) < 6:
            self._add_clean(obs)
            return []
        clean_bps, clean_retrans = self.clean_sorted.bps.median(), self.clean_sorted.retransmits.median()
        # Degraded: the rate collapsed, or retransmits soared while the rate sagged.
        degraded = (obs.bps < p.lag_collapse * clean_bps
                    or (obs.retransmits >= max(p.lag_retrans_min, p.lag_retrans_factor * clean_retrans)
                        and obs.bps < (1 - 2 * p.lag_rate_drop) * clean_bps))
        if not degraded and obs.bps >= (1 - p.lag_rate_drop) * clean_bps:
            self._add_clean(obs)
        if len(self.runs) == self.runs.maxlen:      # the run leaving the window joins the path's history
            leaving = self.runs[0]
            self.history_runs += 1
            self.history_degraded += leaving[1]
            self.history_collapsed += leaving[2] < p.lag_deep * clean_bps
        self.runs.append((obs.t, degraded, obs.bps, obs.retransmits))
        if self.lag_open:
            recent = list(self.runs)[-(p.lag_runs // 2):]
            if any(r[1] for r in recent):
                return []
            self.lag_open = False
            self.runs.clear()
            return [] if self.loss_kind == "rising_loss" else self.close("rising_loss", recent[0][0], {"recovered": "no degraded runs"})
        if self.is_open("rising_loss"):
            return []
        n = len(self.runs)
        if n < p.lag_runs // 2:
            return []
        if sum(map(_DEGRADED, self.runs)) < p.lag_min_runs and sum(
                1 for r in self.runs if r[2] < p.lag_deep * clean_bps) < p.lag_min_collapsed:
            return []
        flags = [r for r in self.runs if r[1]]
        if not flags:
            return []                      # (runs that collapsed only against a clean rate that rose since)
        since = [r for r in self.runs if r[0] >= flags[0][0]]
        frac = len(flags) / len(since)   # since the first degraded run
        # The other runs must be clean, both lately and right beside the degraded ones: when they
        # are slow too, it is a drop or a window limit, not one bad member.
        for others in ([r[2] for r in list(self.runs)[-(p.lag_runs // 4):] if not r[1]],
                       _beside_degraded(since)):
            if len(others) < 4 or median(others) < (1 - p.lag_rate_drop) * clean_bps:
                return []
        if not p.lag_min_frac <= frac <= p.lag_max_frac:
            return []
        if median(r[2] for r in flags) >= p.lag_typical_depth * clean_bps:
            return []                      # dips that kept a share of the rate: traffic or a host, not a lossy member
        if all(r[1] for r in list(self.runs)[-p.lag_streak:]):
            return []                      # a streak of bad runs is a level change in progress, not 1 in k
        # Against the path's own outlier rate when it has a history: a noisy path is not a LAG.
        usual = self._usual_rate(self.history_degraded)
        if tail_exceeds(len(flags), n, usual, p.lag_alpha) and not self._collapses_stand_out(flags, n, clean_bps):
            return []
        if self._busy_hours(flags) or self._bunched():
            return []
        k = max(2, round(1 / frac))
        self.lag_open = True
        # A step the probes saw is every flow's loss, and it would slow every run: with most runs
        # clean, the probes were on the failing member (the step is this loss, seen from its start).
        step = self.episodes.get("loss_step") if self.loss_kind == "loss_step" else None
        start, became = flags[0][0], []
        if step is not None:
            self.loss_kind = "rising_loss"
            start, became = min(start, step.start), self.close("loss_step", obs.t, {"became": "rising_loss"})
        return self.open(
            "rising_loss", start=start, at=obs.t, severity="warning", score=min(1.0, 0.5 + frac),
            summary=f"About 1 in {k} throughput runs degraded ({len(flags)} of {n}: retransmits at "
                    f"{median(r[3] for r in flags):,.0f} vs {clean_retrans:,.0f}, rate "
                    f"{median(r[2] for r in flags) / 1e6:,.0f} vs {clean_bps / 1e6:,.0f} Mb/s) while the rest are clean: "
                    f"the signature of a failing member in a {k}-link aggregate.",
            evidence={"lag_k_estimate": k, "degraded_fraction": round(frac, 3), "degraded_runs": len(flags),
                      "runs": n, "clean_bps": round(clean_bps), "clean_retransmits": clean_retrans,
                      "degraded_times": [from_epoch(r[0]) for r in flags][:8],
                      **({"was": "loss_step"} if step is not None else {})},
        ) + became

    def _collapses_stand_out(self, flags: list, n: int, clean_bps: float) -> bool:
        """Whether the runs that collapsed (below ``lag_deep`` of the clean rate) are more than the
        path's own collapses (at least ``lag_collapse_rate``) explain. The flows hashed onto a
        failing member collapse; a clean path's runs seldom do, so they stand out sooner than all
        bad runs together, and also on a path whose congestion now and then costs a run half its
        rate, where all bad runs together may be no more than usual."""
        p = self.p
        collapsed = sum(1 for r in flags if r[2] < p.lag_deep * clean_bps)
        if collapsed < p.lag_min_collapsed:
            return False
        usual = self._usual_rate(self.history_collapsed, p.lag_collapse_rate)
        return not tail_exceeds(collapsed, n, usual, p.lag_alpha)

    def _usual_rate(self, history_count: int, floor: float | None = None) -> float:
        """The share of runs expected to be bad (``history_count`` of the runs older than the LAG
        window): ``floor`` (``lag_outlier_rate`` unless given), or the path's own rate when it has
        half a window of history and that is higher."""
        p = self.p
        floor = p.lag_outlier_rate if floor is None else floor
        if self.history_runs >= p.lag_runs // 2:
            return max(floor, history_count / self.history_runs)
        return floor

    def _add_clean(self, obs: ThroughputObs) -> None:
        self.clean.append((obs.bps, obs.retransmits))
        self.clean_sorted.bps.append(obs.bps)
        self.clean_sorted.retransmits.append(obs.retransmits)

    def _bunched(self) -> bool:
        """True when the degraded runs come in blocks (Wald–Wolfowitz runs test: significantly too
        few alternations between degraded and clean runs), as a level change does, not 1 in k."""
        flags = np.array([r[1] for r in self.runs], dtype=float)
        z, p_two_sided = runstest_1samp(flags, cutoff=0.5, correction=False)
        return bool(z < 0 and p_two_sided / 2 < self.p.lag_cluster_alpha)

    def _busy_hours(self, flags: list) -> bool:
        """True when the degraded runs bunch into one 6-hour slot of the day (a busy hour, not a LAG)."""
        hours = [int(t // 3600) % 24 for t, *_ in flags]
        best = max(sum(1 for h in hours if (h - s) % 24 < 6) for s in range(24))
        return best > self.p.lag_busy_share * len(hours)
