"""Per-record observations: the few numbers each detector reads, taken once from a record.

Detectors never touch the record dicts themselves: :func:`observe` turns one canonical record
(the JSON form of :mod:`pathwatch.contract.records`) into a small slotted object, so that the
same detector code runs on records from Kafka, from files and from notebooks.

>>> o = observe({"kind": "latency", "time": "2024-01-01T00:00:00Z", "one_way": True,
...              "packets_sent": 600, "packets_lost": 3, "delay_min_ms": 10.0})
>>> o.t, o.sent, o.lost, round(o.loss, 4)
(1704067200.0, 600, 3, 0.005)
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from statistics import median
from typing import Any


def epoch(text: str) -> float:
    """RFC 3339 ``...Z`` time as Unix seconds (records always carry UTC)."""
    return datetime.fromisoformat(text).timestamp()


@dataclass(slots=True)
class ThroughputObs:
    t: float
    ok: bool
    error: str | None
    bps: float | None
    retransmits: int | None
    rtt_ms: float | None
    window_bytes: int | None
    mss_bytes: int | None
    duration_s: float | None
    streams: int | None
    udp: bool
    # Seconds at the start of the run moving less than a tenth of the run's typical rate.
    stall_s: float
    # Robust coefficient of variation (1.4826 MAD / median) of the interval rates after any stall
    # and the first moving second (None: fewer than 2 such intervals).
    interval_cv: float | None
    # Retransmits in the stalled start (the MTU black-hole signature) and in the whole run.
    stall_retransmits: int
    # The rate the test asked for (iperf3 -b, pscheduler's bandwidth); None: as fast as it goes.
    target_bps: float | None = None
    # The lowest smoothed RTT the sender saw (None: not reported; read as ``rtt_ms``).
    rtt_min_ms: float | None = None
    # The other windows that can hold a flow: the receive window the receiver advertised and the
    # sender's socket buffer for all its streams (record contract v3); None: the tool did not say.
    receive_window_bytes: int | None = None
    send_buffer_bytes: int | None = None
    # Measured over IPv6: a path of its own (see :class:`pathwatch.models.monitor.PathMonitor`).
    v6: bool = False


@dataclass(slots=True)
class LatencyObs:
    t: float
    ok: bool
    one_way: bool
    sent: int
    lost: int
    loss: float | None
    delay_min_ms: float | None
    delay_median_ms: float | None
    delay_p95_ms: float | None
    clock_error_ms: float | None
    synchronized: bool | None
    v6: bool = False


@dataclass(slots=True)
class TraceObs:
    t: float
    ok: bool
    tool: str
    # Responding address per TTL (None for silence), from TTL 1.
    hops: tuple[str | None, ...]
    asns: tuple[int | None, ...]
    path_id: str
    as_path_id: str | None
    reached: bool | None
    pmtu_bytes: int | None
    # Smallest MTU any hop reported, and the TTL that reported it.
    min_hop_mtu: int | None
    min_hop_mtu_ttl: int | None
    # RTT of the last answering hop (ms), a cheap route-level RTT.
    last_rtt_ms: float | None
    last_answer_ttl: int
    v6: bool = False


Observation = ThroughputObs | LatencyObs | TraceObs


def black_hole_stall(obs: ThroughputObs, stall_s: float, retransmits_min: int) -> bool:
    """Whether a run's start stalls as in a path MTU black hole: ``stall_s`` or more of near-silence
    that retransmit at least ``retransmits_min`` segments (the vanished head segment resent at each
    retransmission timeout). A slow start's first seconds on a long fat path move as little but
    lose nothing: no retransmits, no stall. Half of a black hole's signature: a start that loses
    segments to a full queue stalls too, and only a run that then crawls on is a hole's
    (:mod:`pathwatch.models.stall`, which the detectors ask).

    >>> from dataclasses import replace
    >>> slow_start = ThroughputObs(0.0, True, None, 6e9, 0, 170.0, None, 8948, 10.0, 1, False, 2.0, 0.05, 0)
    >>> black_hole_stall(slow_start, 2.0, 2), black_hole_stall(replace(slow_start, stall_retransmits=5), 2.0, 2)
    (False, True)
    """
    return obs.stall_s >= stall_s and obs.stall_retransmits >= retransmits_min


def observe(record: dict[str, Any]) -> Observation | None:
    """The observation for one canonical record; None for a kind no detector reads."""
    kind = record.get("kind")
    if kind == "throughput":
        obs = _throughput(record)
    elif kind == "latency":
        obs = _latency(record)
    elif kind == "trace":
        obs = _trace(record)
    else:
        return None
    if record.get("ip_version") == 6:
        obs.v6 = True
    return obs


def _throughput(r: dict[str, Any]) -> ThroughputObs:
    intervals = [i for i in r.get("intervals") or () if not i.get("omitted")]
    rates = [i["throughput_bps"] for i in intervals]
    stall_s, stall_retrans, cv = 0.0, 0, None
    if rates:
        typical = median(rates) if len(rates) < 4 else sorted(rates)[int(len(rates) * 0.75)]
        for interval in intervals:
            if interval["throughput_bps"] >= 0.1 * typical:
                break
            stall_s = interval["end_s"]
            stall_retrans += interval.get("retransmits") or 0
        # Flatness after slow start: the first moving second is left out, and the spread is a
        # robust one (median absolute deviation over the median), so one odd second does not count.
        # Two seconds are enough to see it (a 3-second test, as some meshes and the lab run).
        moving = [i["throughput_bps"] for i in intervals if i["end_s"] > stall_s][1:]
        if len(moving) >= 2:
            middle = median(moving)
            if middle > 0:
                cv = 1.4826 * median(abs(x - middle) for x in moving) / middle
    send_buffer = r.get("send_buffer_bytes")             # per stream
    return ThroughputObs(
        t=epoch(r["time"]),
        ok=bool(r.get("succeeded", True)),
        error=r.get("error"),
        bps=r.get("throughput_bps"),
        retransmits=r.get("retransmits"),
        rtt_ms=r.get("rtt_ms"),
        window_bytes=r.get("tcp_window_bytes"),
        mss_bytes=r.get("mss_bytes"),
        duration_s=r.get("duration_s"),
        streams=r.get("streams"),
        udp=r.get("protocol") == "udp",
        stall_s=stall_s,
        interval_cv=cv,
        stall_retransmits=stall_retrans,
        target_bps=r.get("target_bitrate_bps"),
        rtt_min_ms=r.get("rtt_min_ms"),
        receive_window_bytes=r.get("receive_window_bytes"),
        send_buffer_bytes=send_buffer * (r.get("streams") or 1) if send_buffer else None,
    )


def _latency(r: dict[str, Any]) -> LatencyObs:
    sent = r.get("packets_sent") or 0
    lost = r.get("packets_lost")
    if lost is None and r.get("packets_received") is not None and sent:
        lost = max(sent - r["packets_received"], 0)
    loss = r.get("loss_ratio")
    if loss is None and sent and lost is not None:
        loss = lost / sent
    return LatencyObs(
        t=epoch(r["time"]),
        ok=bool(r.get("succeeded", True)),
        one_way=bool(r.get("one_way", False)),
        sent=sent,
        lost=lost or 0,
        loss=loss,
        delay_min_ms=r.get("delay_min_ms"),
        delay_median_ms=r.get("delay_median_ms"),
        delay_p95_ms=r.get("delay_p95_ms"),
        clock_error_ms=r.get("max_clock_error_ms"),
        synchronized=r.get("clock_synchronized"),
    )


def unreachable_answer(error: str | None) -> bool:
    """Whether a hop's ``error`` is a router's destination-unreachable answer (traceroute's ``!H !N
    !X !P !A ...``, or a spelled-out "unreachable"/"prohibited"), which says the trace ends there.
    Fragmentation needed (``!F``) is the MTU's, not a dead end.

    >>> [unreachable_answer(e) for e in ("!H", "!X", "!F-1500", None, "host-unreachable")]
    [True, True, False, False, True]
    """
    if not error:
        return False
    text = error.strip().lower()
    if text.startswith("!"):
        return not text.startswith("!f")
    return "unreach" in text or "prohibit" in text


def _trace(r: dict[str, Any]) -> TraceObs:
    # A router answering "destination unreachable" (a host gone dark behind it, a filter) is where
    # the trace ended, not a hop of a route: it is left out as if silent, and the trace did not
    # reach. Kept in, the router's address at the destination's TTL would read as a new route.
    # (The destination itself answering so was reached.)
    destination_ip = r.get("destination_ip")
    hops_in = [h for h in r.get("hops") or []
               if not unreachable_answer(h.get("error")) or (destination_ip and h.get("ip") == destination_ip)]
    by_ttl: dict[int, dict[str, Any]] = {h["ttl"]: h for h in hops_in}
    top = max(by_ttl, default=0)
    hops = tuple((by_ttl.get(ttl) or {}).get("ip") for ttl in range(1, top + 1))
    asns = tuple((by_ttl.get(ttl) or {}).get("asn") for ttl in range(1, top + 1))
    min_mtu = min_mtu_ttl = None
    last_rtt, last_ttl = None, 0
    for hop in hops_in:
        mtu = hop.get("mtu")
        if mtu and (min_mtu is None or mtu < min_mtu):
            min_mtu, min_mtu_ttl = mtu, hop["ttl"]
        if hop.get("ip") is not None and hop["ttl"] > last_ttl:
            last_ttl, last_rtt = hop["ttl"], hop.get("rtt_ms")
    return TraceObs(
        t=epoch(r["time"]),
        ok=bool(r.get("succeeded", True)),
        tool=r.get("tool") or "",
        hops=hops,
        asns=asns,
        path_id=r.get("path_id") or "",
        as_path_id=r.get("as_path_id"),
        reached=False if len(hops_in) < len(r.get("hops") or []) else r.get("reached"),
        pmtu_bytes=r.get("pmtu_bytes"),
        min_hop_mtu=min_mtu,
        min_hop_mtu_ttl=min_mtu_ttl,
        last_rtt_ms=last_rtt,
        last_answer_ttl=last_ttl,
    )
