"""Episodes turned into per-measurement modifiers: for a batch of test times on one path,
how much delay, loss, rate and route each pathology (and the healthy daily swing) adds.

Everything here is a pure function of time, so the latency, throughput and trace tests of a
path see the same state at the same moment (a route change moves RTT, one-way delay and the
hop list together).

>>> import numpy as np
>>> from pathwatch.sim.episode import Episode
>>> shift = Episode("latency_shift", "a", "b", 100, None, {"owd_delta_ms": 5.0, "rtt_delta_ms": 10.0, "from_ttl": 3})
>>> mods = modifiers([shift], "a", np.array([50.0, 150.0]))
>>> mods.owd_delta_ms.tolist(), mods.rtt_delta_ms.tolist()
([0.0, 5.0], [0.0, 10.0])
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields

import numpy as np

from .config import DAY_S
from .mesh import Diurnal
from .episode import Episode

_HALF_HOUR = 1800.0
_MAXERROR_GROWTH_MS_PER_S = 0.5   # the kernel's maxerror grows 500 ppm once NTP stops
_MAXERROR_CAP_MS = 16000.0


@dataclass
class Modifiers:
    """Per-measurement changes for ``n`` test times of one path (arrays of length n)."""

    n: int
    rtt_delta_ms: np.ndarray
    owd_delta_ms: np.ndarray
    clock_error_ms: np.ndarray       # added to the hosts' healthy max-clock-error
    loss: np.ndarray                 # per-packet random loss every flow on the path sees (TCP: Mathis)
    congestion_loss: np.ndarray      # drops at a full queue: probes see them, TCP just gets its share
    lag_loss: np.ndarray             # loss on one LAG member (a flow hashed onto it sees it)
    queue_weight: np.ndarray         # share of packets meeting a standing queue
    queue_ms: np.ndarray             # that queue's exponential scale
    rate_factor: np.ndarray
    retransmit_factor: np.ndarray
    window_limited: np.ndarray       # bool
    mtu_blackhole: np.ndarray        # bool
    unreachable: np.ndarray          # bool
    route_changed: np.ndarray        # bool
    floor_ms: np.ndarray             # a standing queue on the way: every packet waits (one-way floor, RTT)
    return_floor_ms: np.ndarray      # a standing queue on the way back: RTT only (ACKs, the destination's reply)
    jitter_weight: np.ndarray        # share of probes a loaded host timestamps late
    jitter_ms: np.ndarray            # that lateness' exponential scale
    cpu_bound: np.ndarray            # bool: a loaded host's CPU, not its NIC or the network, sets the rate
    episodes: dict[str, Episode] = field(default_factory=dict)
    floor_after: float = 0.0         # routers this far along the path (frac) and beyond sit behind the queue

    def param(self, kind: str, name: str, default=None):
        episode = self.episodes.get(kind)
        return episode.params.get(name, default) if episode else default


_ONES = ("rate_factor", "retransmit_factor")
_FLAGS = ("window_limited", "mtu_blackhole", "unreachable", "route_changed", "cpu_bound")


def _empty(n: int) -> Modifiers:
    """No change at all: zero deltas and losses, factors of one, flags off."""
    arrays = {f.name: np.ones(n) if f.name in _ONES else np.zeros(n, dtype=bool) if f.name in _FLAGS else np.zeros(n)
              for f in fields(Modifiers) if f.name not in ("n", "episodes", "floor_after")}
    return Modifiers(n=n, **arrays)


def hour_of_day(t: np.ndarray) -> np.ndarray:
    return (t % DAY_S) / 3600.0


def healthy_busy(diurnal: Diurnal, t: np.ndarray) -> np.ndarray:
    """0..1: how busy a healthy path is at ``t`` (a Gaussian bump around its peak hour).

    >>> d = Diurnal(peak_utc_h=14.0, width_h=2.0, throughput_drop=0.1, queue_weight=0.1, queue_ms=0.3)
    >>> healthy_busy(d, np.array([14 * 3600.0, 2 * 3600.0])).round(3).tolist()
    [1.0, 0.0]
    """
    distance = np.abs(hour_of_day(t) - diurnal.peak_utc_h)
    distance = np.minimum(distance, 24.0 - distance)
    return np.exp(-0.5 * (distance / diurnal.width_h) ** 2)


def busy_window(t: np.ndarray, start: int, busy_utc_h: float, hours: float) -> np.ndarray:
    """0..1 saturation profile: a daily window of ``hours`` from ``busy_utc_h``, half-hour ramps,
    from ``start`` on; each day's depth varies a little (x0.85..1.15, capped at 1).

    >>> busy_window(np.array([13.0, 15.0, 20.0]) * 3600, 0, 14.0, 4.0).round(2).tolist()  # day 0: depth 0.85
    [0.0, 0.85, 0.0]
    """
    since = (t - busy_utc_h * 3600.0) % DAY_S
    ramp = np.clip(np.minimum(since, hours * 3600.0 - since) / _HALF_HOUR, 0.0, 1.0)
    day = np.floor((t - busy_utc_h * 3600.0) / DAY_S)
    depth = 0.85 + 0.3 * ((day * 2654435761) % 1000) / 1000.0
    return np.where(t >= start, np.minimum(1.0, ramp * depth), 0.0)


def clock_offset_ms(params: dict, since_s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(clock offset, max-clock-error) of a host whose clock went bad ``since_s`` seconds ago."""
    if params["mode"] == "unsynced":
        offset = params["drift_ppm"] * 1e-6 * since_s * 1000.0
        error = np.minimum(_MAXERROR_CAP_MS, 1.0 + _MAXERROR_GROWTH_MS_PER_S * since_s)
        return offset, error
    return params["step_ms"] + 0.2e-6 * since_s * 1000.0, np.full(since_s.shape, params["error_ms"])


def silenced(episodes: list[Episode], t: np.ndarray) -> np.ndarray:
    """Which test times fall while the source's collector publishes nothing (no_data)."""
    quiet = np.zeros(len(t), dtype=bool)
    for episode in episodes:
        if episode.kind == "no_data":
            quiet |= episode.active(t)
    return quiet


def modifiers(episodes: list[Episode], src: str, t: np.ndarray) -> Modifiers:
    """The modifiers of one path's ``episodes`` at test times ``t`` (Unix seconds)."""
    mods = _empty(len(t))
    for episode in episodes:
        mods.episodes[episode.kind] = episode
        on = episode.active(t)
        p = episode.params
        kind = episode.kind
        if kind in ("route_change", "latency_shift"):
            mods.rtt_delta_ms += np.where(on, p["rtt_delta_ms"], 0.0)
            mods.owd_delta_ms += np.where(on, p["owd_delta_ms"], 0.0)
            if kind == "route_change":
                mods.route_changed |= on
        elif kind == "clock_error":
            offset, error = clock_offset_ms(p, np.maximum(0.0, t - episode.start))
            sign = -1.0 if p["host"] == src else 1.0  # a sender ahead makes delays shorter
            mods.owd_delta_ms += np.where(on, sign * offset, 0.0)
            mods.clock_error_ms += np.where(on, error, 0.0)
        elif kind == "rising_loss":
            ramp = np.clip((t - episode.start) / (p["ramp_days"] * DAY_S), 0.0, 1.0) ** p["shape"]
            mods.lag_loss += np.where(on, p["final_loss"] * ramp, 0.0)
        elif kind == "loss_step":
            mods.loss += np.where(on, p["loss"], 0.0)
        elif kind == "diurnal_saturation":
            busy = np.where(on, busy_window(t, episode.start, p["busy_utc_h"], p["busy_hours"]), 0.0)
            mods.rate_factor *= 1.0 - (1.0 - p["keep"]) * busy
            mods.congestion_loss += p["loss"] * busy
            mods.queue_weight = np.maximum(mods.queue_weight, p["queue_weight"] * busy)
            mods.queue_ms = np.where(busy > 0, p["queue_ms"] * (0.4 + 0.6 * busy), mods.queue_ms)
            mods.retransmit_factor *= 1.0 + 8.0 * busy
        elif kind == "throughput_drop":
            mods.rate_factor *= np.where(on, p["keep"], 1.0)
            mods.retransmit_factor *= np.where(on, p["retransmit_factor"], 1.0)
        elif kind == "window_limited":
            mods.window_limited |= on
        elif kind == "mtu_blackhole":
            mods.mtu_blackhole |= on
        elif kind == "unreachable":
            mods.unreachable |= on
        elif kind == "no_data":
            pass  # nothing is measured differently: the results just never arrive (see silenced)
        else:
            raise ValueError(f"unknown pathology {kind!r}")
    return mods
