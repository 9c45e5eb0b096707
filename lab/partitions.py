"""Which Kafka partition a path's records land in, so that a lab run feeds every partition.

The detect job's watermark is the minimum over the records topic's partitions, and a partition
counts as idle only after ten minutes without data (streaming/detect_job.py). A real mesh has
hundreds of paths, so every partition carries some. The lab has twelve, and on its compressed
clock ten real minutes are days of lab time: a partition that carried the last run's paths
but none of this one's holds the watermark back, and watermark alignment then pauses the
partitions that do carry data. The lab therefore picks a run's tag (its hosts' names, and so its
path keys) such that its paths reach every partition.

The producers (Flink's Kafka sink, and ``pathwatch publish`` with ``murmur2_random``) place a
keyed message with the Java client's partitioner: ``murmur2(key) & 0x7fffffff`` modulo the
partition count. confluent-kafka does not expose it, so it is written out here (Kafka's
``Utils.murmur2``).

>>> murmur2(b"21"), murmur2(b"foobar"), murmur2(b"abc")
(-973932308, -790332482, 479470107)
>>> partition_of("a1.437815.lab>b2.437815.lab", 6)
2
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

_SEED, _M, _MASK = 0x9747B28C, 0x5BD1E995, 0xFFFFFFFF


def murmur2(data: bytes) -> int:
    """Kafka's 32-bit murmur2 of ``data``, as a signed int like Java's."""
    length = len(data)
    h = (_SEED ^ length) & _MASK
    whole = length - length % 4
    for i in range(0, whole, 4):
        k = int.from_bytes(data[i:i + 4], "little")
        k = (k * _M) & _MASK
        k ^= k >> 24
        k = (k * _M) & _MASK
        h = ((h * _M) & _MASK) ^ k
    rest = length % 4
    if rest == 3:
        h ^= data[whole + 2] << 16
    if rest >= 2:
        h ^= data[whole + 1] << 8
    if rest >= 1:
        h ^= data[whole]
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def partition_of(key: str, partitions: int) -> int:
    """The partition the Java client's default partitioner gives a message keyed ``key``."""
    return (murmur2(key.encode()) & 0x7FFFFFFF) % partitions


def tag_feeding_every_partition(keys_of: Callable[[str], Iterable[str]], partitions: int,
                                new_tag: Callable[[], str], tries: int = 200) -> str:
    """A tag whose path keys (``keys_of(tag)``) reach the most partitions — all of them when it can.

    >>> tags = iter(["t1", "t2", "t3"])
    >>> tag_feeding_every_partition(lambda t: [t + "x", t + "y"], 1, lambda: next(tags))
    't1'
    """
    best, best_reach = "", -1
    for _ in range(tries):
        tag = new_tag()
        reach = len({partition_of(key, partitions) for key in keys_of(tag)})
        if reach > best_reach:
            best, best_reach = tag, reach
        if reach >= partitions:
            break
    return best
