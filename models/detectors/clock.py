"""clock_error: one-way delays that cannot be true.

A one-way delay sample is bad when its minimum is negative, when it is absurd (beyond
``absurd_ms``), when the tool says the clocks are unsynchronised, or when its reported maximum
clock error exceeds ``max_error_ms`` (WLCG flags corrections over 100 ms). The delay floor may
also drift: a steady Theil–Sen slope of the minimum delay over ``drift_window`` samples, far
steeper than any queueing or routing change, is a clock running away; a floor that moved in
one jump (more than ``drift_jump_share`` of its whole move between two samples: a clock stepped
back into sync, a route changed) is a step, not a drift. ``bad_needed`` bad
samples among the last ``bad_window`` open the anomaly; ``good_needed`` good ones in a row close it.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

import numpy as np

from pathwatch.models.anomaly import Anomaly
from pathwatch.models.base import Detector, Params
from pathwatch.models.observe import LatencyObs


@dataclass(frozen=True)
class ClockParams(Params):
    negative_ms: float = -0.05      # minimum delays below this are impossible
    absurd_ms: float = 5000.0       # one-way delays above this are not a network
    max_error_ms: float = 50.0      # reported clock error above this is a clock problem
    bad_window: int = 3
    bad_needed: int = 2
    good_needed: int = 6
    drift_window: int = 18          # samples in the drift check
    drift_ms_per_h: float = 3.0     # slope of the delay floor that only a clock makes
    drift_tau: float = 0.8          # and this monotone (Kendall's tau)
    drift_jump_share: float = 0.5   # a floor that made more than this share of its move in one jump stepped


class ClockDetector(Detector):
    name = "clock"
    kinds = ("clock_error",)
    reads = (LatencyObs,)
    Params = ClockParams

    def __init__(self, source, destination, params=None):
        super().__init__(source, destination, params)
        self.recent: deque[bool] = deque(maxlen=self.p.bad_window)
        self.floor: deque[tuple[float, float]] = deque(maxlen=self.p.drift_window)
        self.floor_values: deque[float] = deque(maxlen=self.p.drift_window)   # the floor's delays alone
        # (low, high): no higher than the floor's smallest delay, no lower than its largest (exact
        # after each full look, widened by each new delay), so that high − low bounds its move
        self.floor_bounds: tuple[float, float] = _NO_BOUNDS
        self.good = 0
        self.first_bad: float | None = None
        self.facts: dict = {}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        if "floor_values" not in state:    # pickled before the floor's delays were kept apart
            self.floor_values = deque((v for _, v in self.floor), maxlen=self.floor.maxlen)
        if "floor_bounds" not in state:    # ... or their bounds
            self.floor_bounds = _NO_BOUNDS

    def observe(self, obs: LatencyObs) -> list[Anomaly]:
        delay = obs.delay_min_ms
        if not obs.ok or not obs.one_way or delay is None or obs.lost >= obs.sent > 0:
            return []
        p = self.p
        error = obs.clock_error_ms
        if (delay >= p.negative_ms and (obs.delay_median_ms or delay) <= p.absurd_ms
                and (error is None or error <= p.max_error_ms) and obs.synchronized is not False):
            reasons = []                   # (what _instant finds in a plausible sample, cheaper)
        else:
            reasons = self._instant(obs)
        loss = obs.loss
        if loss is None or loss < 0.5:
            self.floor.append((obs.t, delay))
            self.floor_values.append(delay)
            low, high = self.floor_bounds
            if not low <= delay <= high:
                self.floor_bounds = _widened(self.floor_bounds, delay)
        if not reasons:
            floor = self.floor
            if len(floor) < p.drift_window:
                drift = None                # (_drift's first two answers, inlined: this runs per sample)
            else:
                low, high = self.floor_bounds
                least = p.drift_ms_per_h * ((floor[-1][0] - floor[0][0]) / 3600.0) * 0.5
                drift = None if high - low < least else self._drift()
            if drift is None:               # a good sample
                self.recent.append(False)
                self.good = good = self.good + 1
                if good >= p.good_needed:
                    if self.first_bad is not None or self.facts:
                        self.first_bad, self.facts = None, {}
                    if "clock_error" in self.episodes:
                        return self.close("clock_error", obs.t, {"recovered": "delays plausible again"})
                return []
            reasons.append(f"delay floor drifting {drift:+.1f} ms/h")
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
        if sum(self.recent) < self.p.bad_needed:
            return []
        return self.open("clock_error", start=self.first_bad, at=obs.t, severity="major", score=1.0,
                         summary=f"Clock trouble on {self.source} → {self.destination}: {'; '.join(self.facts['reasons'][:2])}.",
                         evidence=dict(self.facts))

    def _instant(self, obs: LatencyObs) -> list[str]:
        reasons = []
        if obs.delay_min_ms < self.p.negative_ms:
            reasons.append(f"negative one-way delay ({obs.delay_min_ms:.1f} ms)")
        if (obs.delay_median_ms or obs.delay_min_ms) > self.p.absurd_ms:
            reasons.append(f"absurd one-way delay ({obs.delay_median_ms or obs.delay_min_ms:,.0f} ms)")
        if obs.clock_error_ms is not None and obs.clock_error_ms > self.p.max_error_ms:
            reasons.append(f"clock error estimate {obs.clock_error_ms:,.0f} ms")
        if obs.synchronized is False:
            reasons.append("clocks reported unsynchronised")
        return reasons

    def _drift(self) -> float | None:
        floor = self.floor
        if len(floor) < self.p.drift_window:
            return None
        values = self.floor_values
        hours = (floor[-1][0] - floor[0][0]) / 3600.0
        least = self.p.drift_ms_per_h * hours * 0.5
        low, high = self.floor_bounds
        if high - low < least:
            return None                      # the floor moved too little to be drifting (it moved no more)
        low, high = min(values), max(values)
        self.floor_bounds = (low, high) if not math.isnan(sum(values)) else _NO_BOUNDS
        moved = high - low
        if moved < least:
            return None                      # the floor moved too little to be drifting
        if _largest_jump(values) > self.p.drift_jump_share * moved:
            return None                      # it stepped (a correction, a reroute): not a drift
        hours_at = [p[0] / 3600.0 for p in floor]
        if not _may_drift(hours_at, list(values), self.p.drift_ms_per_h, self.p.drift_tau):
            return None
        from scipy.stats import kendalltau, theilslopes

        t = np.array([p[0] for p in floor]) / 3600.0
        y = np.array([p[1] for p in floor])
        slope = theilslopes(y, t).slope
        if abs(slope) < self.p.drift_ms_per_h:
            return None
        tau = kendalltau(t, y).statistic
        return slope if abs(tau) >= self.p.drift_tau else None


_NO_BOUNDS = (-math.inf, math.inf)


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


# Relative room left around the drift thresholds for the pure-Python pre-check's rounding.
_ROOM = 1e-9


def _may_drift(x: list[float], y: list[float], min_slope: float, min_tau: float) -> bool:
    """False when scipy's Theil–Sen slope of ``y`` on ``x`` is surely below ``min_slope`` or
    Kendall's tau-b surely below ``min_tau`` (both in absolute value): the same pairs, in pure
    Python, for the few dozen values of a drift window. True when it may drift (ask scipy).

    >>> _may_drift([0.0, 1.0, 2.0, 3.0], [0.0, 5.0, 10.0, 15.0], 3.0, 0.8)
    True
    >>> _may_drift([0.0, 1.0, 2.0, 3.0], [0.0, 5.0, 0.0, 5.0], 3.0, 0.8)
    False
    """
    if not all(map(math.isfinite, x)) or not all(map(math.isfinite, y)):
        return True                          # NaNs and infinities: leave them to scipy
    slopes, concordance, x_ties, y_ties = [], 0, 0, 0
    n = len(x)
    for i in range(n):
        xi, yi = x[i], y[i]
        for j in range(i + 1, n):
            dx, dy = x[j] - xi, y[j] - yi
            if dx > 0:
                slopes.append(dy / dx)
            elif dx < 0:
                slopes.append((yi - y[j]) / (xi - x[j]))
            else:
                x_ties += 1
            if dy == 0:
                y_ties += 1
            elif dx != 0:
                concordance += 1 if (dx > 0) == (dy > 0) else -1
    if not slopes:
        return True
    slopes.sort()
    half = len(slopes) // 2
    slope = slopes[half] if len(slopes) % 2 else (slopes[half - 1] + slopes[half]) / 2
    if abs(slope) < min_slope * (1 - _ROOM):
        return False
    pairs = n * (n - 1) // 2
    if x_ties == pairs or y_ties == pairs:
        return True
    tau = concordance / math.sqrt(pairs - x_ties) / math.sqrt(pairs - y_ties)
    return abs(tau) >= min_tau * (1 - _ROOM)
