"""Trackers a level detector keeps per series: its robust baseline and the changes that came back.

:class:`LevelTracker` keeps a series' recent normal values (median and MAD) and the values
pending beyond them; :class:`DailyChanges` remembers changes that came back within a day, so a
later change confined to the same hours reads as the daily pattern again. The throughput
(:mod:`pathwatch.models.detectors.levels`) and delay (:mod:`pathwatch.models.detectors.latency`)
detectors each keep their own. ``p`` in :class:`DailyChanges` is the detector's parameters
(``daily_return_s``, ``daily_slack_s``, ``daily_days``, ``daily_factor``).
"""

from __future__ import annotations

import math
from collections import deque
from itertools import repeat
from operator import sub

from pathwatch.models.window import SortedWindow, median

DAY = 86400.0


def mad(values, center: float | None = None) -> float:
    """Median absolute deviation from ``center`` (by default the median of ``values``).

    >>> mad([1.0, 2.0, 4.0, 9.0])
    1.5
    """
    m = median(values) if center is None else center
    return median(map(abs, map(sub, values, repeat(m))))      # (abs(v - m) of each, mapped in C)


class LevelTracker:
    """A robust level-shift tracker for one series: baseline values and the current run of outliers."""

    __slots__ = ("base", "pending", "frozen", "_cached", "_adds", "_worked", "_moved")
    REFRESH = 4  # values added between recomputations of the baseline median and MAD

    def __init__(self, size: int):
        # (kept in sorted order too: the median needs no sort, and an equal value replacing the
        # oldest leaves the median and MAD as they were)
        self.base = SortedWindow(size)
        self.pending: list[tuple[float, float]] = []   # (t, value) beyond the baseline, same direction
        self.frozen: tuple[float, float] | None = None  # (median, threshold) while a shift is open
        self._cached: tuple[float, float] | None = None
        self._adds = 0
        # The last (median, threshold) worked out, and whether the baseline's values moved since:
        # a recomputation of values that did not move gives it again.
        self._worked: tuple[float, float] | None = None
        self._moved = True

    def add(self, value: float) -> None:
        if self.base.append(value):
            self._moved = True
        self._adds += 1
        values = self.base.values            # (the window's deque: len and maxlen without a Python call)
        if self._adds >= self.REFRESH or len(values) < values.maxlen:
            self._cached, self._adds = None, 0

    def rebase(self, values) -> None:
        self.base.clear()
        self.base.extend(values)
        self._cached, self._adds, self._moved = None, 0, True

    def reference(self, k: float, floor: float, rel: float) -> tuple[float, float]:
        """(baseline median, distance beyond it that counts as shifted)."""
        if self.frozen is not None:
            return self.frozen
        if self._cached is None:
            if self._moved or self._worked is None:
                base = self.base
                m = base.median()               # (median(base), without the sort)
                self._worked, self._moved = (m, max(floor, rel * abs(m), k * 1.4826 * mad(base, m))), False
            self._cached = self._worked
        return self._cached



class DailyChanges:
    """A series' recent changes that came back within ``daily_return_s``: (start, end, direction).

    A level shift persists; a load pattern follows the clock. A change confined to hours that
    changed the same way on a previous day, when that one came back within the day, is the daily
    pattern again (:meth:`explains`), not a shift.

    >>> from types import SimpleNamespace
    >>> p = SimpleNamespace(daily_return_s=22 * 3600.0, daily_slack_s=2 * 3600.0, daily_days=2, daily_factor=2.0)
    >>> daily = DailyChanges()
    >>> daily.record(13 * 3600.0, 18 * 3600.0, 1, p, size=12.0)
    >>> daily.explains(DAY + 13.5 * 3600, DAY + 17 * 3600, 1, p, 14.0), daily.explains(DAY + 13.5 * 3600, DAY + 23 * 3600, 1, p, 14.0)
    (True, False)
    >>> daily.explains(DAY + 13.5 * 3600, DAY + 17 * 3600, 1, p, 30.0)   # far more than that day's: not its pattern
    False
    """

    __slots__ = ("spans",)

    def __init__(self) -> None:
        self.spans: deque[tuple[float, float, int, float]] = deque(maxlen=32)   # (start, end, direction, size)

    def __getstate__(self):
        return (list(self.spans),)

    def __setstate__(self, state) -> None:
        self.spans = deque(state[0], maxlen=32)

    def record(self, start: float, end: float, direction: int, p, size: float = math.inf) -> None:
        """Keep a change of ``size`` that came back at ``end`` (one within ``daily_slack_s`` of the last joins it)."""
        spans = self.spans
        if spans and spans[-1][2] == direction and start - spans[-1][1] <= p.daily_slack_s:
            joined = spans.pop()
            start, size = joined[0], max(size, joined[3])
        horizon = start - p.daily_days * DAY - p.daily_return_s - p.daily_slack_s
        while spans and spans[0][1] < horizon:
            spans.popleft()                 # (too old to explain anything from now on)
        if end - start <= p.daily_return_s:
            spans.append((start, end, direction, size))

    def largest(self, direction: int) -> float:
        """The largest change kept in ``direction`` (inf when none is: no size to go by)."""
        return max((span[3] for span in self.spans if span[2] == direction), default=math.inf)

    def explains(self, start: float, now: float, direction: int, p, size: float = 0.0) -> bool:
        """Whether a change from ``start`` to ``now``, now of ``size``, stays within the hours (±
        ``daily_slack_s``) a change in the same direction that came back covered on one of the
        ``daily_days`` days before, and within ``daily_factor`` times its size (a load varies from
        day to day; a step far beyond it is something else)."""
        slack = p.daily_slack_s
        for first, last, towards, then in self.spans:
            if towards == direction and size <= p.daily_factor * then:
                for days in range(1, p.daily_days + 1):
                    if first + days * DAY - slack <= start and now <= last + days * DAY + slack:
                        return True
        return False
