"""Single-stream TCP iperf3 runs: per-second intervals and the end summary, tool-neutral.

The run's rate comes from the path (capacity, efficiency, run-to-run noise, a mild daily
swing) and its modifiers: a lower level (drop, saturation), the Mathis limit
``C·MSS/(RTT·√p)`` under loss (the whole path, or one LAG member a flow may hash onto),
``window/RTT`` for a small TCP buffer, or a PMTUD black-hole stall. The first seconds follow
slow start, so long paths start slower.

>>> import numpy as np
>>> from pathwatch.sim.effects import modifiers
>>> from pathwatch.sim.mesh import build_mesh
>>> path = build_mesh(3, np.random.default_rng(1)).paths[0]
>>> t = np.array([0.0])
>>> run = measure_throughput(path, t, modifiers([], path.src.name, t), np.random.default_rng(0), duration_s=10)[0]
>>> len(run.intervals), run.ok, 0.5 < run.bytes_sent * 8 / run.seconds / path.rate_bps < 1.6
(10, True, True)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .effects import Modifiers, healthy_busy
from .mesh import Path

_OUTLIER_RATE = 0.015       # a healthy run spoiled by someone else's burst
_OVERSHOOT_RATE = 0.15      # slow-start overshoot: a burst of retransmits early in the run
_MATHIS_C = {"cubic": 1.6, "htcp": 1.4, "bbr": None}
_LN2 = math.log(2.0)


@dataclass(frozen=True, slots=True)
class Interval:
    start: float
    end: float
    bytes: int
    retransmits: int
    cwnd: int
    rtt_us: int
    rttvar_us: int

    @property
    def bps(self) -> float:
        return self.bytes * 8 / (self.end - self.start)


@dataclass(frozen=True, slots=True)
class Run:
    time: float
    ok: bool
    error: str | None
    intervals: tuple[Interval, ...] = ()
    seconds: float = 0.0
    bytes_sent: int = 0
    bytes_received: int = 0
    receiver_seconds: float = 0.0
    mss: int = 0
    pmtu: int = 0
    congestion: str = "cubic"

    @property
    def retransmits(self) -> int:
        return sum(i.retransmits for i in self.intervals)


def ramp_fractions(edges: np.ndarray, rtt_s: float, t_ss: float) -> np.ndarray:
    """Mean share of the steady rate per interval while slow start doubles the rate each RTT.

    >>> ramp_fractions(np.array([0.0, 1.0, 2.0]), 0.01, 0.1).round(2).tolist()
    [0.91, 1.0]
    """
    def integral(x):  # ∫_0^x g, with g = 2^((t - t_ss)/rtt) before t_ss, 1 after
        before = np.minimum(x, t_ss)
        ramp = rtt_s / _LN2 * (np.exp2((before - t_ss) / rtt_s) - np.exp2(-t_ss / rtt_s))
        return ramp + np.maximum(0.0, x - t_ss)
    total = integral(edges)
    return np.diff(total) / np.diff(edges)


def _loss_rate(rate: float, loss: float, path: Path, rtt_s: float, rng: np.random.Generator) -> float:
    """The rate a loss probability allows: Mathis for loss-based TCPs, a milder cut for BBR."""
    if loss <= 0:
        return rate
    c = _MATHIS_C.get(path.src.congestion)
    if c is None:
        return rate * (1.0 - min(0.5, 12.0 * loss))
    return min(rate, c * path.mss * 8 / (rtt_s * math.sqrt(loss)) * rng.uniform(0.8, 1.2))


def _edges(duration_s: int, rng: np.random.Generator) -> np.ndarray:
    drift = rng.uniform(2e-5, 3e-4)
    return np.round(np.arange(duration_s + 1) * (1 + drift), 6)


def _run(path: Path, t: float, i: int, mods: Modifiers, rng: np.random.Generator, duration_s: int) -> Run:
    if mods.unreachable[i]:
        error = mods.param("unreachable", "error", "No route to host")
        return Run(time=t, ok=False, error=f"unable to connect to server: {error}")
    rtt_ms = path.rtt_ms + float(mods.rtt_delta_ms[i]) + float(mods.floor_ms[i] + mods.return_floor_ms[i])
    busy = float(healthy_busy(path.diurnal, np.array([t]))[0])
    rate = path.rate_bps * (1 - path.diurnal.throughput_drop * busy) * float(mods.rate_factor[i])
    rate *= math.exp(rng.normal(0.0, path.rate_cv))
    loss = float(mods.loss[i])
    members = mods.param("rising_loss", "members", 0)
    if members and rng.integers(members) == 0:  # this flow hashed onto the failing member
        loss += float(mods.lag_loss[i])
    rate = _loss_rate(rate, loss, path, rtt_ms / 1000.0, rng)
    edges = _edges(duration_s, rng)
    if mods.mtu_blackhole[i]:
        return _stalled(path, t, mods, rng, edges, rtt_ms)
    window = mods.param("window_limited", "window_bytes") if mods.window_limited[i] else None
    return _flowing(path, t, i, mods, rng, edges, rtt_ms, rate, loss, window)


def _flowing(path: Path, t: float, i: int, mods: Modifiers, rng: np.random.Generator, edges: np.ndarray,
             rtt_ms: float, rate: float, loss: float, window: int | None) -> Run:
    """A run that moves data from the start: slow start, then ``rate`` (or window/RTT) with noise."""
    rtt_s = rtt_ms / 1000.0
    outlier = window is None and rng.random() < _OUTLIER_RATE
    if window is not None:
        rate = window * 8 / rtt_s * rng.uniform(0.975, 0.99)
    elif outlier:
        rate *= rng.uniform(0.15, 0.6)
    if path.nic_limited and window is None:
        rate = min(rate, path.rate_bps)
    t_ss = rtt_s * math.log2(max(2.0, rate * rtt_s / 8 / path.mss / 10))  # slow start from 10 segments to the BDP
    shape = ramp_fractions(edges, rtt_s, t_ss)
    wobble = 0.004 if window is not None or path.nic_limited else (0.03 if path.src.congestion == "bbr" else 0.06)
    if loss > 1e-4:
        wobble += 0.12
    if mods.cpu_bound[i] and window is None:  # a loaded host's CPU sets the pace: uneven, not pinned at the NIC
        wobble = max(wobble, 0.08)
    shape = shape * np.clip(rng.normal(1.0, wobble, len(shape)), 0.2, None)
    seconds = np.diff(edges)
    steady = rate * edges[-1] / float(np.sum(shape * seconds))
    interval_bytes = np.round(steady * shape * seconds / 8).astype(np.int64)

    packets = float(interval_bytes.sum()) / path.mss
    mean_retransmits = 0.0 if window is not None else path.retransmits_mean * mods.retransmit_factor[i]
    retransmits = rng.poisson(mean_retransmits * rng.gamma(2.0, 0.5)) + rng.binomial(int(packets), min(1.0, loss) * 1.3)
    if outlier:
        retransmits += int(rng.integers(50, 1500))
    per_interval = rng.multinomial(retransmits, _retransmit_weights(shape, rng))
    if window is None and path.src.congestion != "bbr" and rng.random() < _OVERSHOOT_RATE:
        per_interval[int(np.argmax(shape >= 0.8))] += int(rng.integers(5, 150))

    queue_ms = float(mods.queue_weight[i] * mods.queue_ms[i]) * 3
    self_queue = rtt_ms * (rng.uniform(0.0, 0.002, len(shape)) if window is not None else
                           rng.uniform(0.0, 0.06 if path.src.congestion != "bbr" else 0.02, len(shape)))
    rtt_us = np.round((rtt_ms + self_queue + queue_ms) * 1000).astype(np.int64)
    if window is not None:
        cwnd = np.full(len(shape), window) * rng.uniform(0.985, 1.0, len(shape))
    else:
        cwnd = np.maximum(10 * path.mss, steady * shape * rtt_s / 8 * rng.uniform(1.05, 1.35, len(shape)))
    intervals = tuple(
        Interval(float(edges[k]), float(edges[k + 1]), int(interval_bytes[k]), int(per_interval[k]),
                 int(cwnd[k]) // path.mss * path.mss or path.mss, int(rtt_us[k]),
                 int(max(10, self_queue[k] * 300 + rtt_ms * 2)))
        for k in range(len(shape)))
    return _finish(path, t, intervals, edges, rtt_s, rng)


def _retransmit_weights(shape: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    weights = np.maximum(shape, 0.05) * rng.uniform(0.5, 1.5, len(shape))
    return weights / weights.sum()


def _stalled(path: Path, t: float, mods: Modifiers, rng: np.random.Generator, edges: np.ndarray, rtt_ms: float) -> Run:
    """A PMTUD black hole: full-size segments vanish, RTO backoff, then MTU probing at a small MSS."""
    stall = int(mods.param("mtu_blackhole", "stall_s", 3))
    after = float(mods.param("mtu_blackhole", "rate_after_bps", 2e7)) * rng.uniform(0.7, 1.3)
    count = len(edges) - 1
    intervals = []
    for k in range(count):
        seconds = edges[k + 1] - edges[k]
        if k < stall:
            sent = int(rng.choice([0, 0, 0, 1448, 2896])) if k > 0 else int(rng.integers(0, 2)) * 1448
            intervals.append(Interval(float(edges[k]), float(edges[k + 1]), sent, int(rng.integers(1, 5)),
                                      path.mss, int(rtt_ms * 1000 * rng.uniform(1.0, 1.02)), int(rtt_ms * 500)))
            continue
        grow = min(1.0, 0.35 + 0.2 * (k - stall))
        rate = after * grow * rng.uniform(0.85, 1.15)
        cwnd = max(2 * 1024, int(rate * rtt_ms / 1000 / 8 * 1.2))
        intervals.append(Interval(float(edges[k]), float(edges[k + 1]), int(rate * seconds / 8),
                                  int(rng.poisson(1.5)), cwnd, int(rtt_ms * 1000 * rng.uniform(1.0, 1.05)),
                                  int(rtt_ms * 80)))
    return _finish(path, t, tuple(intervals), edges, rtt_ms / 1000.0, rng, pmtu=path.src.mtu)


def _finish(path: Path, t: float, intervals: tuple[Interval, ...], edges: np.ndarray, rtt_s: float,
            rng: np.random.Generator, pmtu: int | None = None) -> Run:
    sent = sum(i.bytes for i in intervals)
    return Run(
        time=t, ok=True, error=None, intervals=intervals, seconds=float(edges[-1]), bytes_sent=sent,
        bytes_received=max(0, sent - int(rng.integers(0, 3)) * path.mss),
        receiver_seconds=round(float(edges[-1]) + rtt_s / 2 + rng.uniform(0.0, 0.002), 6),
        mss=path.src.mtu - 52, pmtu=pmtu or path.mtu, congestion=path.src.congestion,
    )


def measure_throughput(path: Path, t: np.ndarray, mods: Modifiers, rng: np.random.Generator, *,
                       duration_s: int) -> list[Run]:
    """One iperf3 run per start time in ``t``."""
    return [_run(path, float(t[i]), i, mods, rng, duration_s) for i in range(len(t))]
