"""The parse path's fast paths give exactly what the plain code they replace gives.

Each test keeps the straightforward version (the code before the speed-up) as its reference
and compares on many random inputs, including the edge cases where a fast path must step aside.
"""

from __future__ import annotations

import random
import statistics
import uuid
from datetime import datetime, timedelta, timezone

import isodate
import pytest

from pathwatch.contract import timefmt
from pathwatch.contract.ids import PATHWATCH_NAMESPACE, uuid5_text
from pathwatch.ingest.errors import ParseError
from pathwatch.ingest.formats import _stats
from pathwatch.ingest.formats.pscheduler import _duration_ms


def _outcome(function, *args):
    try:
        return repr(function(*args))
    except Exception as error:  # the same exception type and text count as the same outcome
        return f"{type(error).__name__}: {error}"


def test_uuid5_text_is_uuid5():
    rng = random.Random(1)
    alphabet = "abc|:-. é\u00ff\u4e00\U0001f600 0123456789"
    for _ in range(5_000):
        name = "".join(rng.choice(alphabet) for _ in range(rng.randrange(40)))
        assert uuid5_text(name) == str(uuid.uuid5(PATHWATCH_NAMESPACE, name))
    with pytest.raises(UnicodeEncodeError):
        uuid5_text("lone \ud800 surrogate")


def _format_utc_strftime(moment: datetime) -> str:
    moment = moment.astimezone(timezone.utc)
    text = moment.strftime("%Y-%m-%dT%H:%M:%S")
    if moment.microsecond:
        text += f".{moment.microsecond:06d}"
    return text + "Z"


def test_format_utc_is_the_strftime_rendering():
    rng = random.Random(2)
    for _ in range(20_000):
        moment = datetime(1970, 1, 1, tzinfo=timezone.utc) + timedelta(
            microseconds=rng.randrange(-62_135_596_800 * 10**6, 253_402_300_799 * 10**6)
        )
        if rng.random() < 0.3:
            moment = moment.replace(microsecond=0)
        if rng.random() < 0.3:
            try:
                moment = moment.astimezone(timezone(timedelta(minutes=rng.randrange(-1439, 1440))))
            except OverflowError:
                pass
        assert timefmt.format_utc(moment) == _format_utc_strftime(moment)


def _duration_ms_isodate(value) -> str:
    try:
        return repr(isodate.parse_duration(value).total_seconds() * 1000.0)
    except (isodate.ISO8601Error, ValueError, AttributeError, TypeError):
        return "rejected"


def test_pscheduler_durations_read_as_isodate_reads_them():
    rng = random.Random(3)
    for _ in range(20_000):
        whole = str(rng.randrange(10 ** rng.randrange(1, 8))).rjust(rng.randrange(1, 8), "0")
        fraction = "".join(rng.choice("0123456789") for _ in range(rng.randrange(0, 8)))
        value = rng.choice([f"PT{whole}.{fraction}S", f"PT{whole}S", f"PT{whole},{fraction}S", f"-PT{whole}S",
                            f"PT1M{whole}.{fraction}S", f"PT{whole}.S", "PT\u0663S"])  # fmt: skip
        try:
            ours = repr(_duration_ms(value, "rtt"))
        except ParseError:
            ours = "rejected"
        assert ours == _duration_ms_isodate(value), value


def _histogram_stats_loop(histogram: dict[float, int]) -> dict[str, float | None]:
    buckets = sorted((value, count) for value, count in histogram.items() if count > 0)
    total = sum(count for _, count in buckets)
    if not total:
        return _stats.delay_stats([])

    def rank(position: int) -> float:
        seen = 0
        for value, count in buckets:
            seen += count
            if seen >= position:
                return value
        return buckets[-1][0]

    median = rank((total + 1) // 2) if total % 2 else (rank(total // 2) + rank(total // 2 + 1)) / 2
    p95 = rank(max(1, -(-95 * total // 100)))
    return {
        "delay_min_ms": buckets[0][0],
        "delay_median_ms": median,
        "delay_mean_ms": sum(value * count for value, count in buckets) / total,
        "delay_p95_ms": p95,
        "delay_max_ms": buckets[-1][0],
        "jitter_ms": max(0.0, p95 - median),
    }


def test_histogram_stats_equal_the_rank_loop():
    rng = random.Random(4)
    for _ in range(5_000):
        histogram = {}
        for _ in range(rng.randrange(0, 40)):
            bucket = rng.choice([round(rng.uniform(-5, 100), rng.randrange(0, 4)), float(rng.randrange(50)), 1e-9 * rng.randrange(100)])
            histogram[bucket] = rng.choice([0, 1, 2, 3, rng.randrange(10_000)])
        assert repr(_stats.histogram_stats(histogram)) == repr(_histogram_stats_loop(histogram))
