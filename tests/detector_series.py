"""Focused synthetic observation series for the detector tests: healthy noise plus one change."""

from __future__ import annotations

import numpy as np

from pathwatch.models.observe import LatencyObs, ThroughputObs, TraceObs

T0 = 1_767_571_200.0  # 2026-01-05T00:00:00Z
HOUR, DAY = 3600.0, 86400.0


def run(t: float, bps: float, *, retransmits: int = 0, rtt_ms: float = 20.0, cv: float = 0.08,
        stall_s: float = 0.0, stall_retransmits: int = 0, ok: bool = True) -> ThroughputObs:
    return ThroughputObs(t=t, ok=ok, error=None if ok else "unable to connect", bps=bps if ok else None,
                         retransmits=retransmits, rtt_ms=rtt_ms, window_bytes=None, mss_bytes=8948,
                         duration_s=10.0, streams=1, udp=False, stall_s=stall_s, interval_cv=cv,
                         stall_retransmits=stall_retransmits)


def latency(t: float, dmin: float, *, sent: int = 6000, lost: int = 0, queue: float = 0.3,
            clock_error: float | None = 1.0, synchronized: bool | None = True) -> LatencyObs:
    return LatencyObs(t=t, ok=True, one_way=True, sent=sent, lost=lost, loss=lost / sent if sent else None,
                      delay_min_ms=dmin, delay_median_ms=dmin + queue, delay_p95_ms=dmin + 3 * queue,
                      clock_error_ms=clock_error, synchronized=synchronized)


def trace(t: float, hops: list[str | None], *, reached: bool = True, rtt: float = 20.0, tool: str = "traceroute",
          asns: list[int | None] | None = None, pmtu: int | None = None, mtu_at: int | None = None) -> TraceObs:
    last = max((i + 1 for i, h in enumerate(hops) if h is not None), default=0)
    return TraceObs(t=t, ok=True, tool=tool, hops=tuple(hops), asns=tuple(asns or [None] * len(hops)),
                    path_id="|".join(h or "*" for h in hops), as_path_id=None, reached=reached,
                    pmtu_bytes=pmtu, min_hop_mtu=pmtu if mtu_at else None, min_hop_mtu_ttl=mtu_at,
                    last_rtt_ms=rtt if last else None, last_answer_ttl=last)


def throughput_series(rng: np.random.Generator, days: float, every_h: float = 2.0, level: float = 9e9,
                      noise: float = 0.06, start: float = T0):
    """(t, bps) of healthy runs every ``every_h`` hours with a few minutes of jitter."""
    n = int(days * 24 / every_h)
    for i in range(n):
        t = start + i * every_h * HOUR + rng.uniform(0, 300)
        yield t, level * (1 + rng.normal(0, noise))


def latency_times(days: float, every_min: float = 10.0, start: float = T0):
    n = int(days * 24 * 60 / every_min)
    return [start + i * every_min * 60 for i in range(n)]
