"""Delay statistics shared by the latency parsers (owping raw packets, ping replies)."""

from __future__ import annotations

import statistics
from bisect import bisect_left
from itertools import accumulate
from operator import mul


def median(values: list[float]) -> float:
    """``statistics.median`` of a non-empty list of numbers (the same value, without its generality).

    >>> median([3.0, 1.0]), median([2, 7, 1])
    (2.0, 2)
    """
    ordered = sorted(values)
    half = len(ordered) // 2
    return ordered[half] if len(ordered) % 2 else (ordered[half - 1] + ordered[half]) / 2


def delay_stats(delays_ms: list[float]) -> dict[str, float | None]:
    """min/median/mean/p95/max of delays and jitter as p95 - median (owping's definition).

    >>> delay_stats([1.0, 2.0, 3.0, 4.0])["delay_median_ms"]
    2.5
    >>> delay_stats([])["delay_min_ms"] is None
    True
    """
    if not delays_ms:
        return dict.fromkeys(
            ("delay_min_ms", "delay_median_ms", "delay_mean_ms", "delay_p95_ms", "delay_max_ms", "jitter_ms")
        )
    ordered = sorted(delays_ms)
    count = len(ordered)
    half = count // 2
    middle = ordered[half] if count % 2 else (ordered[half - 1] + ordered[half]) / 2  # statistics.median
    if count > 1:  # statistics.quantiles(n=20, method="inclusive")[18], computed on the one sorted copy
        low, delta = divmod(19 * (count - 1), 20)
        # Written as a step up from the lower value and clamped, so that equal neighbours give that
        # value exactly (statistics' weighted sum gives 0.038 * 3 -> 0.03799999999999999) and the
        # order min <= median <= p95 <= max survives rounding.
        p95 = min(max(ordered[low] + (ordered[low + 1] - ordered[low]) * delta / 20, middle), ordered[-1])
    else:
        p95 = delays_ms[0]
    return {
        "delay_min_ms": min(delays_ms),
        "delay_median_ms": middle,
        "delay_mean_ms": statistics.fmean(delays_ms),
        "delay_p95_ms": p95,
        "delay_max_ms": max(delays_ms),
        "jitter_ms": max(0.0, p95 - middle),
    }


def histogram_stats(histogram: dict[float, int]) -> dict[str, float | None]:
    """The same statistics from a delay histogram {bucket_ms: count}, as pscheduler reports latency.

    Quantiles are the bucket holding that rank (nearest rank), so they are exact to the bucket width.

    >>> histogram_stats({1.0: 2, 2.0: 1, 10.0: 1})["delay_median_ms"]
    1.5
    """
    buckets = sorted(item for item in histogram.items() if item[1] > 0)
    if not buckets:
        return delay_stats([])
    values = [value for value, _ in buckets]
    counts = [count for _, count in buckets]
    seen = list(accumulate(counts))  # seen[i]: samples up to and including bucket i
    total = seen[-1]

    def rank(position: int) -> float:  # value of the position-th smallest sample, 1-based
        return values[bisect_left(seen, position)]

    median = rank((total + 1) // 2) if total % 2 else (rank(total // 2) + rank(total // 2 + 1)) / 2
    p95 = rank(max(1, -(-95 * total // 100)))
    return {
        "delay_min_ms": values[0],
        "delay_median_ms": median,
        "delay_mean_ms": sum(map(mul, values, counts)) / total,
        "delay_p95_ms": p95,
        "delay_max_ms": values[-1],
        "jitter_ms": max(0.0, p95 - median),
    }
