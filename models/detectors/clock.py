"""clock_error: one-way delays that cannot be true.

A one-way delay sample is bad when its minimum is negative, when it is absurd (beyond
``absurd_ms``), when the tool says the clocks are unsynchronised, or when its reported maximum
clock error exceeds ``max_error_ms`` (WLCG flags corrections over 100 ms). The delay floor may
also drift: a steady Theil–Sen slope of the minimum delay over ``drift_window`` samples (and at
least ``drift_span_s``) is a clock running away only when nothing but a clock explains it. A
floor that moved in one jump (more than ``drift_jump_share`` of its whole move between two
samples: a clock stepped back into sync, a route changed) is a step, not a drift. A clock offset
shifts every packet of a sample by the same amount and touches nothing else, so a drifting floor
is *load*, not a clock, when

- loss rose with it: the window's loss is significantly (``load_alpha``) above the path's loss
  of the last ``reference_s``, or its higher-floor samples lose significantly more than its lower;
- queueing rose with it: the spread above the floor (median − min, p95 − min) is significantly
  larger in the window's higher-floor samples than in its lower ones, by a histogram bucket
  (``spread_resolution_ms``) at least;
- the path's RTT moved with it: traces that reached the destination, at the lowest and the
  highest floor seen around the window, differ by at least ``rtt_follow_share`` of the floor's
  difference (a clock leaves the RTT alone: it adds to one direction what it takes from the other);
- it is a return: the floor falls back towards the path's settled floor (the lowest floor of the
  last ``reference_s``, kept per ``bin_s``) without going below it, after having been there
  within the last day;
- it is the time of day: at the same time a day or two earlier the floor stood at least
  ``tod_share`` as far above the settled floor, and it came back to it in between (a clock's
  offset does not).

``bad_needed`` bad samples among the last ``bad_window`` open the anomaly; ``good_needed`` good
ones in a row close it. The evidence carries the signed drift (``drift_ms_per_h``) and the signed
offset of the floor from the path's settled floor (``offset_ms``). The incident grouper joins
the clock errors of one host through that shared host by onset time; it does not read the
signed figures.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

import numpy as np

from pathwatch.models.anomaly import Anomaly
from pathwatch.models.base import Detector
from pathwatch.models.params import Params
from pathwatch.models.observe import LatencyObs, TraceObs
from pathwatch.models.significance import mannwhitney_pvalue, tail_exceeds
from pathwatch.models.window import median


@dataclass(frozen=True)
class ClockParams(Params):
    negative_ms: float = -0.05      # minimum delays below this are impossible
    absurd_ms: float = 5000.0       # one-way delays above this are not a network
    max_error_ms: float = 50.0      # reported clock error above this is a clock problem
    bad_window: int = 3
    bad_needed: int = 2
    good_needed: int = 6
    drift_window: int = 18          # samples in the drift check, at least ...
    drift_span_s: float = 3600.0    # ... and at least this long (minute samples: loss and queueing need time to show)
    drift_ms_per_h: float = 3.0     # slope of the delay floor that only a clock makes
    drift_tau: float = 0.8          # and this monotone (Kendall's tau)
    drift_jump_share: float = 0.5   # a floor that made more than this share of its move in one jump stepped
    # What rules a drifting floor out as a clock (see the module docstring): a clock moves every packet
    # alike and nothing else, so loss, queueing, the RTT, a return or the time of day explain a floor's move.
    load_alpha: float = 1e-3        # significance of loss or queueing rising with the floor
    spread_resolution_ms: float = 0.1  # owamp's histogram bucket: spreads closer than this did not grow
    reference_s: float = 2 * 86400.0  # the path's recent history: loss and floor per bin_s
    bin_s: float = 600.0            # the history's bins (fine enough to compare the same minutes of two days)
    rtt_follow_share: float = 0.5   # the RTT moved at least this share of the floor's move: the path, not a clock
    return_ms: float = 1.0          # a floor within this of a level is back at it
    tod_share: float = 0.5          # the same time a day earlier the floor stood at least this share as high
    traces_kept: int = 48           # reached traces' RTTs kept for the RTT check ...
    trace_floor_s: float = 3600.0   # ... each with the latest floor sample, when no older than this


class ClockDetector(Detector):
    name = "clock"
    kinds = ("clock_error",)
    reads = (LatencyObs, TraceObs)
    Params = ClockParams

    def __init__(self, source, destination, params=None, context=None):
        super().__init__(source, destination, params, context)
        self.recent: deque[bool] = deque(maxlen=self.p.bad_window)
        # (t, delay, lost, sent, median delay, p95 delay): drift_window samples, drift_span_s at least
        self.floor: deque[tuple] = deque()
        self.floor_values: deque[float] = deque()             # the floor's delays alone
        # (low, high): no higher than the floor's smallest delay, no lower than its largest (exact
        # after each full look, widened by each new delay), so that high − low bounds its move
        self.floor_bounds: tuple[float, float] = _NO_BOUNDS
        self.good = 0
        self.first_bad: float | None = None
        self.facts: dict = {}
        # Per bin_s of the last reference_s: [bin number, lost, sent, lowest floor], and where the last bin ends.
        self.bins: deque[list] = deque()
        self.bin_end = -math.inf
        # Reached traces: (t, last-hop RTT, the latest floor at the time or None).
        self.traces: deque[tuple] = deque(maxlen=self.p.traces_kept)
        self.settled_for: tuple | None = None    # (first bad sample's time, the settled floor before it)
        self.floor_seen = 0                      # samples ever added to the floor
        # The floor's pair slopes in sorted order when _drift last computed them, with floor_seen and
        # the floor's length then: bounds for the next windows' Theil–Sen slope (a cache: not pickled)
        self.slopes_kept: tuple[int, int, np.ndarray] | None = None

    def __getstate__(self) -> dict:
        return {key: value for key, value in self.__dict__.items() if key != "slopes_kept"}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self.slopes_kept = None

    def handlers(self) -> dict[type, object]:
        return {LatencyObs: self._latency, TraceObs: self._trace}

    def observe(self, obs) -> list[Anomaly]:
        if isinstance(obs, TraceObs):
            return self._trace(obs)
        return self._latency(obs)

    def _trace(self, obs: TraceObs) -> list[Anomaly]:
        """Keep the RTT of traces that reached the destination, with the floor at the time."""
        if obs.ok and obs.reached and obs.last_rtt_ms is not None:
            last = self.floor[-1] if self.floor else None     # (t, delay, ...) of the latest floor sample
            floor = last[1] if last is not None and obs.t - last[0] <= self.p.trace_floor_s else None
            self.traces.append((obs.t, obs.last_rtt_ms, floor))
        return []

    def _latency(self, obs: LatencyObs) -> list[Anomaly]:
        delay = obs.delay_min_ms
        if not obs.ok or not obs.one_way or delay is None or obs.lost >= obs.sent > 0:
            return []
        p = self.p
        reasons = []                       # what is wrong with this sample alone
        if delay < p.negative_ms:
            reasons.append(f"negative one-way delay ({delay:.1f} ms)")
        if (obs.delay_median_ms or delay) > p.absurd_ms:
            reasons.append(f"absurd one-way delay ({obs.delay_median_ms or delay:,.0f} ms)")
        error = obs.clock_error_ms
        if error is not None and error > p.max_error_ms:
            reasons.append(f"clock error estimate {error:,.0f} ms")
        if obs.synchronized is False:
            reasons.append("clocks reported unsynchronised")
        loss = obs.loss
        if loss is None or loss < 0.5:
            t = obs.t
            floor, values = self.floor, self.floor_values
            lost, sent = obs.lost, obs.sent
            floor.append((t, delay, lost, sent, obs.delay_median_ms, obs.delay_p95_ms))
            values.append(delay)
            self.floor_seen += 1
            if len(floor) > p.drift_window:
                oldest = t - p.drift_span_s
                while len(floor) > p.drift_window and floor[0][0] < oldest:
                    floor.popleft()
                    values.popleft()
            low, high = self.floor_bounds
            if not low <= delay <= high:
                self.floor_bounds = _widened(self.floor_bounds, delay)
            if t < self.bin_end:            # (observations come in time order: the last bin's)
                row = self.bins[-1]
                row[1] += lost
                row[2] += sent
                if delay < row[3]:
                    row[3] = delay
            else:
                bins = self.bins
                number = int(t // p.bin_s)
                bins.append([number, lost, sent, delay])
                self.bin_end = (number + 1) * p.bin_s
                oldest = number - p.reference_s / p.bin_s
                while bins[0][0] < oldest:
                    bins.popleft()
        if not reasons:
            floor = self.floor
            if len(floor) < p.drift_window:
                drift = None                # (too few samples to judge a drift)
            else:
                low, high = self.floor_bounds
                least = p.drift_ms_per_h * ((floor[-1][0] - floor[0][0]) / 3600.0) * 0.5
                drift = None if high - low < least else self._drift(least)   # (it moved no more than that)
            if drift is None:               # a good sample
                self.recent.append(False)
                self.good = good = self.good + 1
                if good >= p.good_needed:
                    if self.first_bad is not None or self.facts:
                        self.first_bad, self.facts = None, {}
                    if "clock_error" in self.episodes:
                        return self.close("clock_error", obs.t, {"recovered": "delays plausible again"})
                return []
            reasons.append(f"delay floor drifting {drift:+.1f} ms/h, unexplained by load, RTT or time of day")
            self.facts["drift_ms_per_h"] = round(drift, 2)
        self.recent.append(True)
        self.good = 0
        if not self.is_open("clock_error") and not any(list(self.recent)[:-1]):
            self.first_bad = obs.t      # the first bad sample of this run of bad ones
        self.facts.setdefault("reasons", [])
        for reason in reasons:
            if reason not in self.facts["reasons"] and len(self.facts["reasons"]) < 5:
                self.facts["reasons"].append(reason)
        self.facts.update({"delay_min_ms": obs.delay_min_ms, "max_clock_error_ms": obs.clock_error_ms,
                           "synchronized": obs.synchronized})
        kept = self.settled_for
        if kept is None or kept[0] != self.first_bad:      # (once per run of bad samples)
            kept = self.settled_for = (self.first_bad, self._settled(self.first_bad))
        settled = kept[1]
        if settled is not None and math.isfinite(obs.delay_min_ms - settled):
            self.facts["offset_ms"] = round(obs.delay_min_ms - settled, 3)
        if sum(self.recent) < self.p.bad_needed:
            return []
        return self.open("clock_error", start=self.first_bad, at=obs.t, severity="major", score=1.0,
                         summary=f"Clock trouble on {self.source} → {self.destination}: {'; '.join(self.facts['reasons'][:2])}.",
                         evidence=dict(self.facts))

    def _drift(self, least: float) -> float | None:
        """The floor's drift (ms/h) that nothing but a clock explains, or None. :meth:`_latency` asks
        once the floor holds ``drift_window`` samples whose kept bounds moved at least ``least``
        (half the drift threshold over the floor's span)."""
        floor = self.floor
        values = self.floor_values
        low, high = min(values), max(values)
        self.floor_bounds = (low, high) if not math.isnan(sum(values)) else _NO_BOUNDS
        moved = high - low
        if moved < least:
            return None                      # the floor moved too little to be drifting
        if self._slope_surely_below():
            return None                      # (what the Theil–Sen slope below would find)
        if _largest_jump(values) > self.p.drift_jump_share * moved:
            return None                      # it stepped (a correction, a reroute): not a drift
        x, y = np.array([p[0] for p in floor]) / 3600.0, np.array(values)
        slope, slopes = _theil_sen(x, y)
        self.slopes_kept = None if slopes is None else (self.floor_seen, len(floor), slopes)
        if abs(slope) < self.p.drift_ms_per_h:
            return None
        if not abs(_kendall_tau(x, y)) >= self.p.drift_tau:
            return None                      # (NaN too: not monotone)
        return None if self._explained(slope) else slope

    def _slope_surely_below(self) -> bool:
        """Whether the floor's Theil–Sen slope is surely below ``drift_ms_per_h`` either way, from the
        pair slopes kept when it was last computed: each sample added since then brought, and each
        that left took, at most one slope per other sample the window held (see
        :func:`_median_surely_within`)."""
        kept = self.slopes_kept
        if kept is None:
            return False
        seen, length, slopes = kept
        arrived = self.floor_seen - seen
        left = length + arrived - len(self.floor)
        most = length + arrived - 1          # (the other samples a sample can pair with)
        return _median_surely_within(slopes, arrived * most, left * most, self.p.drift_ms_per_h)

    # ------------------------------------------------------------------ what else moves a floor
    def _explained(self, slope: float) -> str | None:
        """What other than a clock explains the window's drifting floor (None: nothing does)."""
        for check in (self._loss_rose, self._queue_grew, self._rtt_followed, self._returning, self._time_of_day):
            why = check(slope)
            if why:
                return why
        return None

    def _halves(self) -> tuple[list[int], list[int]]:
        """Indices of the window's samples below and above its median floor."""
        values = list(self.floor_values)
        order = sorted(range(len(values)), key=values.__getitem__)
        half = len(order) // 2
        return order[:half], order[len(order) - half:]

    def _loss_rose(self, slope: float) -> str | None:
        """Loss above the path's recent loss, or higher at the window's higher floor: load."""
        alpha = self.p.load_alpha
        load = [row[2:4] for row in self.floor]      # (lost, sent)
        lost = sum(row[0] for row in load)
        sent = sum(row[1] for row in load)
        if lost and sent:
            first = int(self.floor[0][0] // self.p.bin_s)
            ref_lost = ref_sent = 0
            for number, lost_b, sent_b, _ in self.bins:     # (bins in time order: those before the window)
                if number >= first:
                    break
                ref_lost += lost_b
                ref_sent += sent_b
            if ref_sent >= sent:
                rate = (ref_lost + 1.0) / (ref_sent + 1.0)    # (one loss more than seen: never zero)
                if rate < 1.0 and not tail_exceeds(int(lost), int(sent), rate, alpha):
                    return "loss above the path's recent loss"
        low, high = self._halves()
        lost_low, lost_high = sum(load[i][0] for i in low), sum(load[i][0] for i in high)
        sent_low, sent_high = sum(load[i][1] for i in low), sum(load[i][1] for i in high)
        total = lost_low + lost_high
        if total and sent_low and sent_high:
            share = sent_high / (sent_low + sent_high)
            if not tail_exceeds(int(lost_high), int(total), share, alpha):
                return "loss higher where the floor is higher"
        return None

    def _queue_grew(self, slope: float) -> str | None:
        """The spread above the floor larger at the window's higher floor: the queue grew with it."""
        load, values = list(self.floor), list(self.floor_values)
        low, high = self._halves()
        for column in (4, 5):        # median − min, p95 − min
            below = [load[i][column] - values[i] for i in low if load[i][column] is not None]
            above = [load[i][column] - values[i] for i in high if load[i][column] is not None]
            if len(below) >= 3 and len(above) >= 3 and median(above) - median(below) >= self.p.spread_resolution_ms:
                if mannwhitney_pvalue(above, below, "greater", self.p.load_alpha) < self.p.load_alpha:
                    return "queueing above the floor grew with it"
        return None

    def _rtt_followed(self, slope: float) -> str | None:
        """Reached traces around the window whose RTT moved with the floor: the path's delay moved."""
        floor = self.floor
        span = floor[-1][0] - floor[0][0]
        since = floor[0][0] - span
        seen = [(f, rtt) for t, rtt, f in self.traces if f is not None and t >= since]
        if len(seen) < 2:
            return None
        low, high = min(seen), max(seen)
        moved = max(self.floor_values) - min(self.floor_values)
        if not high[0] - low[0] >= 0.5 * moved or high[0] <= low[0]:
            return None
        follow = (high[1] - low[1]) / (high[0] - low[0])
        return "the RTT moved with it" if follow >= self.p.rtt_follow_share else None

    def _settled(self, before: float | None = None) -> float | None:
        """The path's settled floor: its lowest floor of the last ``reference_s`` (before ``before``)."""
        last = None if before is None else int(before // self.p.bin_s)
        lows = [row[3] for row in self.bins if last is None or row[0] < last]
        return min(lows) if lows else None

    def _returning(self, slope: float) -> str | None:
        """A falling floor coming back to the path's settled floor, where it was within the last day."""
        if slope >= 0:
            return None
        first = int(self.floor[0][0] // self.p.bin_s)
        day = round(86400.0 / self.p.bin_s)
        before = [row[3] for row in self.bins if first - day <= row[0] < first]
        settled = self._settled(self.floor[0][0])
        if settled is None or not before:
            return None
        tolerance = self.p.return_ms
        if min(self.floor_values) >= settled - tolerance and min(before) <= settled + tolerance:
            return "the floor returning to where it was"
        return None

    def _time_of_day(self, slope: float) -> str | None:
        """The floor as far from the path's settled floor, the same way, at the same time one or two
        days earlier, and back at the settled floor in between (a clock's offset does not come back)."""
        t0, t1 = self.floor[0][0], self.floor[-1][0]
        settled = self._settled(t0)
        if settled is None:
            return None
        now = self.floor_values[-1] - settled
        if not abs(now) > self.p.return_ms:
            return None
        width = self.p.bin_s
        level = {row[0]: row[3] for row in self.bins}
        day = round(86400.0 / width)
        first, last = int(t0 // width), int(t1 // width)
        tolerance = self.p.return_ms
        for days in (1, 2):
            then = [level[b] for b in (last - days * day - 1, last - days * day, last - days * day + 1) if b in level]
            if not then:
                continue
            earlier = (max(then) if now > 0 else min(then)) - settled
            if earlier * now <= 0 or abs(earlier) < self.p.tod_share * abs(now):
                continue
            between = [v for b, v in level.items() if last - days * day + 1 < b < first]
            if between and min(between) <= settled + tolerance:
                return "the floor moved alike at this time a day earlier, and came back"
        return None


_NO_BOUNDS = (-math.inf, math.inf)
_NAN = np.float64(math.nan)


def _widened(bounds: tuple[float, float], value: float) -> tuple[float, float]:
    """Bounds that also hold ``value`` (none at all for a NaN: max and min do not order it).

    >>> _widened((1.0, 2.0), 3.0), _widened((1.0, 2.0), 0.5), _widened((1.0, 2.0), math.nan)
    ((1.0, 3.0), (0.5, 2.0), (-inf, inf))
    """
    low, high = bounds
    if value != value:
        return _NO_BOUNDS
    return (low if low <= value else value, high if high >= value else value)


def _largest_jump(values) -> float:
    """The largest move between two consecutive values.

    >>> _largest_jump([1.0, 1.1, 9.0, 9.1])
    7.9
    """
    largest, previous = 0.0, None
    for value in values:
        if previous is not None and abs(value - previous) > largest:
            largest = abs(value - previous)
        previous = value
    return largest


def _theil_sen(x: np.ndarray, y: np.ndarray) -> tuple[np.float64, np.ndarray | None]:
    """scipy's ``theilslopes(y, x).slope``, bit for bit (its own steps: the slopes of the pairs with
    distinct x, sorted, and numpy's median of them), and those sorted slopes; NaNs and infinities
    are left to scipy (no slopes then).

    >>> slope, slopes = _theil_sen(np.array([0.0, 1.0, 2.0, 3.0]), np.array([0.0, 5.0, 10.0, 16.0]))
    >>> float(slope), slopes.tolist()
    (5.166666666666666, [5.0, 5.0, 5.0, 5.333333333333333, 5.5, 6.0])
    """
    if not (np.isfinite(x).all() and np.isfinite(y).all()):
        from scipy.stats import theilslopes

        return theilslopes(y, x).slope, None
    deltax = x[:, np.newaxis] - x
    rising = deltax > 0                      # each pair of distinct x once, the later x first
    slopes = (y[:, np.newaxis] - y)[rising] / deltax[rising]
    slopes.sort()
    if not slopes.size:
        return _NAN, slopes                  # (scipy: the median of no slopes)
    half = len(slopes) // 2                  # (np.median's value on sorted slopes: the middle one, or the
    slope = slopes[half] if len(slopes) % 2 else (slopes[half - 1] + slopes[half]) / 2    # mean of two)
    return slope, slopes


def _kendall_tau(x: np.ndarray, y: np.ndarray) -> np.float64:
    """scipy's ``kendalltau(x, y).statistic`` (tau-b), bit for bit: the same exact counts of pairs
    (concordant − discordant, tied in x, tied in y) in scipy's formula; NaNs and infinities are
    left to scipy.

    >>> float(_kendall_tau(np.array([0.0, 1.0, 2.0, 3.0]), np.array([0.0, 5.0, 0.0, 5.0])))
    0.4082482904638631
    """
    if not (np.isfinite(x).all() and np.isfinite(y).all()):
        from scipy.stats import kendalltau

        return kendalltau(x, y).statistic
    deltax = x[:, np.newaxis] - x
    deltay = y[:, np.newaxis] - y
    moved = deltay[deltax > 0]               # each pair of distinct x once, the later x first
    untied_difference = int(np.count_nonzero(moved > 0)) - int(np.count_nonzero(moved < 0))   # concordant − discordant
    n = len(x)
    pairs = n * (n - 1) // 2
    x_ties = (int(np.count_nonzero(deltax == 0)) - n) // 2
    y_ties = (int(np.count_nonzero(deltay == 0)) - n) // 2
    if x_ties == pairs or y_ties == pairs:
        return _NAN
    tau = untied_difference / np.sqrt(pairs - x_ties) / np.sqrt(pairs - y_ties)
    return np.minimum(1.0, max(-1.0, tau))


def _median_surely_within(slopes: np.ndarray, added: int, removed: int, bound: float) -> bool:
    """Whether the median of any values made from the sorted ``slopes`` by taking out at most
    ``removed`` of them and adding at most ``added`` others lies strictly within ±``bound``.

    Taking out r values raises the k-th smallest to at most the old (k + r)-th; adding a values
    lowers it to no less than the old (k − a)-th. The median is the middle value or the mean of
    the two middle ones, between them.

    >>> slopes = np.array([-2.0, -1.0, 0.0, 0.5, 1.0, 1.5, 2.0, 9.0, 9.0])
    >>> _median_surely_within(slopes, 1, 1, 3.0), _median_surely_within(slopes, 2, 2, 3.0)
    (True, False)
    """
    count = len(slopes)
    high = (count + added) // 2 + removed             # the middle rank at its highest, raised
    low = (count - removed) // 2 - 1 - added          # the lower middle rank at its lowest, lowered
    if low < 0 or high >= count:
        return False
    lowest, highest = slopes[low], slopes[high]       # (finite and far from overflow: the mean of two
    return bool(-bound < lowest and highest < bound and -1e300 < lowest and highest < 1e300)   # stays between)
