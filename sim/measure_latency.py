"""One-way latency results (owamp/powstream): loss counts and a delay histogram per window.

Delay above the path's minimum is a mixture of exponentials: the path's own jitter, a rare
tail, a small queue in a healthy path's busy hours, and a standing queue when a pathology
(saturation) or a rare bad sample adds one. Histogram buckets are 0.1 ms wide, keyed by
their lower edge in ms (``"21.10"``), as powstream reports them.

>>> import numpy as np
>>> from pathwatch.sim.effects import modifiers
>>> from pathwatch.sim.mesh import build_mesh
>>> path = build_mesh(3, np.random.default_rng(1)).paths[0]
>>> t = np.array([0.0, 600.0])
>>> results = measure_latency(path, t, modifiers([], path.src.name, t), np.random.default_rng(0),
...                           packets=6000, hops=np.array([len(path.route)] * 2))
>>> [sum(r.histogram.values()) + r.lost for r in results]
[6000, 6000]
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .effects import Modifiers, healthy_busy
from .mesh import Path

BUCKET_MS = 0.1
_MAX_BUCKETS = 800
_BAD_SAMPLE_RATE = 0.002     # a window with a loss burst and a queue spike (healthy outlier)


@dataclass(frozen=True, slots=True)
class LatencyResult:
    time: float
    sent: int
    lost: int
    duplicates: int
    reordered: int
    histogram: dict[str, int]
    clock_error_ms: float
    ttl: int


def bucket_keys(buckets: np.ndarray) -> list[str]:
    """The histogram keys of bucket numbers (each bucket's lower edge in ms).

    >>> bucket_keys(np.array([211, -34]))
    ['21.10', '-3.40']
    """
    return [f"{b * BUCKET_MS:.2f}" for b in buckets.tolist()]


def _bucket_probabilities(offset: np.ndarray, weights: np.ndarray, scales: np.ndarray, count: int) -> np.ndarray:
    """P(delay falls in the minimum's bucket + k), k = 0..count-1, the last bucket taking the rest.

    ``offset`` is where the minimum sits inside its bucket; ``weights``/``scales`` (n, c) the
    mixture of exponentials above the minimum.
    """
    edges = np.arange(1, count) * BUCKET_MS - offset[:, None]          # (n, count-1) upper edges
    cdf = np.zeros((len(offset), count - 1))
    for c in range(weights.shape[1]):
        if weights[:, c].any():
            cdf += weights[:, c:c + 1] * -np.expm1(-np.maximum(edges, 0.0) / scales[:, c:c + 1])
    cdf = np.concatenate([np.zeros((len(offset), 1)), cdf, np.ones((len(offset), 1))], axis=1)
    probabilities = np.clip(np.diff(cdf, axis=1), 0.0, None)
    return probabilities / probabilities.sum(axis=1, keepdims=True)


def _histograms(offset, weights, scales, received, rng) -> list[tuple[list[int], list[int]]]:
    """(filled bucket numbers above the minimum's, their counts) per window.

    Windows are grouped by how many buckets their delays can reach (a power of two), so a
    few wide ones (a queue, a bad sample) do not make every window's table wide.
    """
    reach = np.max(np.where(weights > 0, scales, 0.0), axis=1) * 7.0 / BUCKET_MS + 2
    width = np.minimum(_MAX_BUCKETS, 2 ** np.ceil(np.log2(np.maximum(reach, 8)))).astype(int)
    out: list = [None] * len(offset)
    for count in np.unique(width).tolist():
        rows = np.flatnonzero(width == count)
        counts = rng.multinomial(received[rows], _bucket_probabilities(offset[rows], weights[rows], scales[rows], count))
        for row, line in zip(rows.tolist(), counts):
            filled = np.flatnonzero(line)
            out[row] = (filled.tolist(), line[filled].tolist())
    return out


def measure_latency(path: Path, t: np.ndarray, mods: Modifiers, rng: np.random.Generator, *,
                    packets: int, hops: np.ndarray) -> list[LatencyResult]:
    """One result per window starting at ``t``; ``hops`` is the route length (sets the TTL)."""
    n = len(t)
    if n == 0:
        return []
    busy = healthy_busy(path.diurnal, t)
    bad = rng.random(n) < _BAD_SAMPLE_RATE
    spike_ms = rng.uniform(3.0, 30.0, n)
    queue_weight = np.where(bad, np.maximum(mods.queue_weight, 0.3), mods.queue_weight)
    queue_ms = np.where(bad, spike_ms, np.where(mods.queue_ms > 0, mods.queue_ms, 1.0))
    columns = [np.zeros(n), np.full(n, path.tail_weight), path.diurnal.queue_weight * busy, queue_weight]
    spreads = [np.full(n, path.jitter_ms), np.full(n, path.tail_ms), np.full(n, path.diurnal.queue_ms), queue_ms]
    if mods.jitter_weight.any():  # a loaded host timestamps some probes late
        columns.append(mods.jitter_weight)
        spreads.append(np.where(mods.jitter_ms > 0, mods.jitter_ms, 1.0))
    weights = np.minimum(np.stack(columns, axis=1), 0.95)
    weights[:, 0] = np.maximum(0.0, 1.0 - weights[:, 1:].sum(axis=1))
    scales = np.stack(spreads, axis=1)

    minimum = (path.rtt_ms * path.fwd_share + path.clock_offset_ms + mods.owd_delta_ms + mods.floor_ms
               + rng.normal(0.0, 0.004, n))
    first_bucket = np.floor(minimum / BUCKET_MS).astype(np.int64)
    offset = minimum - first_bucket * BUCKET_MS

    owamp_loss = path.loss_base + mods.loss + mods.congestion_loss
    if mods.param("rising_loss", "owamp_on_bad_member"):
        owamp_loss = owamp_loss + mods.lag_loss
    lost = rng.binomial(packets, np.clip(owamp_loss, 0.0, 1.0))
    lost = np.where(bad, np.minimum(packets, lost + rng.integers(10, 400, n)), lost)
    lost = np.where(mods.unreachable, packets, lost)
    received = packets - lost
    histograms = _histograms(offset, weights, scales, received, rng)

    duplicates = ((rng.random(n) < 0.003) & (received > 0)).astype(int).tolist()
    reordered = np.minimum(rng.poisson(0.3 if path.ecmp else 0.02, n), received).tolist()
    clock_error = np.round(np.maximum(0.01, path.src.clock_error_ms + path.dst.clock_error_ms + mods.clock_error_ms
                                      + rng.uniform(-0.05, 0.05, n)), 2).tolist()
    ttls = (256 - hops).tolist()
    lost_list = lost.tolist()
    buckets = [np.asarray(filled, dtype=np.int64) + first_bucket[i] for i, (filled, _) in enumerate(histograms)]
    used = np.unique(np.concatenate(buckets))
    names = dict(zip(used.tolist(), bucket_keys(used)))
    results = []
    for i, (_, counts) in enumerate(histograms):
        histogram = dict(zip([names[b] for b in buckets[i].tolist()], counts))
        results.append(LatencyResult(float(t[i]), packets, lost_list[i], duplicates[i], reordered[i], histogram,
                                     clock_error[i], ttls[i]))
    return results
