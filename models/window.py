"""Exact, cheap medians for the detectors' hot paths.

:func:`median` is :func:`statistics.median` without its overhead; :class:`SortedWindow` is a
bounded sliding window (like ``deque(maxlen=n)``) that also keeps its values in sorted order, so
its median needs no sort. Both return exactly what ``statistics.median`` returns for the same
values: the same middle element, or ``(a + b) / 2`` of the same two for an even count.

>>> w = SortedWindow(3)
>>> w.extend((5.0, 1.0, 3.0, 2.0))
>>> list(w), w.median(), median([4, 1, 3, 2])
([1.0, 3.0, 2.0], 2.0, 2.5)
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections import deque
from collections.abc import Iterable, Iterator
from statistics import StatisticsError


def median(values: Iterable) -> float:
    """``statistics.median(values)``, the same value, faster on the short series detectors keep."""
    data = sorted(values)
    n = len(data)
    if n % 2 == 1:
        return data[n // 2]
    if n == 0:
        raise StatisticsError("no median for empty data")
    return (data[n // 2 - 1] + data[n // 2]) / 2


class SortedWindow:
    """The last ``maxlen`` values in arrival order (iteration, ``[i]``) and in sorted order (``median``).

    ``sorted`` lists equal values in arrival order, as ``sorted()`` of the window would, and
    the value leaving the window is the oldest, so it is the first of its equals there. NaNs
    cannot be kept in order; while the window holds one its median sorts the values afresh
    (what ``statistics.median`` would do). A float that replaces an equal one (a steady cadence's
    gap) leaves ``sorted`` as it is when the window holds floats alone: equal non-zero floats are
    the same number, so which of them stands where makes no difference.
    """

    __slots__ = ("values", "sorted", "nans", "others")

    def __init__(self, maxlen: int, values: Iterable = ()):
        self.values: deque = deque(maxlen=maxlen)
        self.sorted: list = []
        self.nans = 0
        self.others = 0          # values that are not floats
        self.extend(values)

    @property
    def maxlen(self) -> int | None:
        return self.values.maxlen

    def append(self, value) -> bool:
        """Add ``value`` (the oldest leaves a full window); False when ``sorted`` and the median
        surely stay as they were (with a NaN in the window its median depends on the order)."""
        values, ordered = self.values, self.sorted
        if len(values) == values.maxlen:
            oldest = values[0]
            if value == oldest and not self.others and type(value) is float and value:
                values.append(value)         # (the same number leaves and comes: sorted stays)
                return self.nans > 0
            if type(oldest) is not float:
                self.others -= 1
            if oldest != oldest:
                self.nans -= 1
            else:
                del ordered[bisect_left(ordered, oldest)]
        values.append(value)
        if type(value) is not float:
            self.others += 1
        if value != value:
            self.nans += 1
        else:
            insort(ordered, value)
        return True

    def extend(self, values: Iterable) -> None:
        for value in values:
            self.append(value)

    def clear(self) -> None:
        self.values.clear()
        self.sorted.clear()
        self.nans = self.others = 0

    def median(self):
        """``statistics.median`` of the window (StatisticsError when empty)."""
        if self.nans:
            return median(self.values)
        data = self.sorted
        n = len(data)
        if n % 2 == 1:
            return data[n // 2]
        if n == 0:
            raise StatisticsError("no median for empty data")
        return (data[n // 2 - 1] + data[n // 2]) / 2

    def __len__(self) -> int:
        return len(self.values)

    def __iter__(self) -> Iterator:
        return iter(self.values)

    def __getitem__(self, index: int):
        return self.values[index]

    def __repr__(self) -> str:
        return f"SortedWindow({self.values.maxlen}, {list(self.values)!r})"
