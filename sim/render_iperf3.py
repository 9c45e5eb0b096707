"""Raw ``iperf3 -J`` output of a simulated run, as the client prints it.

>>> import numpy as np
>>> from pathwatch.sim.measure_throughput import Run
>>> from pathwatch.sim.mesh import build_mesh
>>> path = build_mesh(3, np.random.default_rng(1)).paths[0]
>>> failed = iperf3_payload(Run(time=1767571200.0, ok=False, error="unable to connect to server: No route to host"), path)
>>> failed["error"], failed["end"]
('unable to connect to server: No route to host', {})
"""

from __future__ import annotations

from .clock import http_date, stable_uuid
from .measure_throughput import Run
from .mesh import Path

_SOCKET = 5
_PORT = 5201


def _has_pmtu(version: str) -> bool:
    """iperf3 reports the path MTU per interval from 3.11 on."""
    major, minor = (int(part) for part in version.split(".")[:2])
    return (major, minor) >= (3, 11)


def _start(run: Run, path: Path, cookie: str) -> dict:
    src, dst = path.src, path.dst
    start = {
        "connected": [{"socket": _SOCKET, "local_host": src.address, "local_port": 32768 + int(cookie[:4], 36) % 28000,
                       "remote_host": dst.address, "remote_port": _PORT}],
        "version": f"iperf {src.iperf_version}",
        "system_info": f"Linux {src.name.split('.')[0]} {src.kernel} #1 SMP x86_64",
        "timestamp": {"time": http_date(run.time), "timesecs": int(run.time)},
        "connecting_to": {"host": dst.name, "port": _PORT},
        "cookie": cookie,
        "tcp_mss_default": run.mss,
    }
    if _has_pmtu(src.iperf_version):
        start.update(target_bitrate=0, fq_rate=0, sock_bufsize=0, sndbuf_actual=16384, rcvbuf_actual=131072)
    start["test_start"] = {"protocol": "TCP", "num_streams": 1, "blksize": 131072, "omit": 0,
                           "duration": len(run.intervals), "bytes": 0, "blocks": 0, "reverse": 0, "tos": 0}
    return start


def _interval(interval, pmtu: int | None) -> dict:
    seconds = round(interval.end - interval.start, 6)
    stream = {"socket": _SOCKET, "start": round(interval.start, 6), "end": round(interval.end, 6), "seconds": seconds,
              "bytes": interval.bytes, "bits_per_second": interval.bytes * 8 / seconds,
              "retransmits": interval.retransmits, "snd_cwnd": interval.cwnd, "rtt": interval.rtt_us,
              "rttvar": interval.rttvar_us}
    if pmtu:
        stream["pmtu"] = pmtu
    stream.update(omitted=False, sender=True)
    total = {key: stream[key] for key in ("start", "end", "seconds", "bytes", "bits_per_second", "retransmits")}
    total.update(omitted=False, sender=True)
    return {"streams": [stream], "sum": total}


def _end(run: Run) -> dict:
    rtts = [i.rtt_us for i in run.intervals]
    sent_bps = run.bytes_sent * 8 / run.seconds
    received_bps = run.bytes_received * 8 / run.receiver_seconds
    sender = {"socket": _SOCKET, "start": 0, "end": run.seconds, "seconds": run.seconds, "bytes": run.bytes_sent,
              "bits_per_second": sent_bps, "retransmits": run.retransmits,
              "max_snd_cwnd": max(i.cwnd for i in run.intervals), "max_rtt": max(rtts), "min_rtt": min(rtts),
              "mean_rtt": round(sum(rtts) / len(rtts)), "sender": True}
    receiver = {"socket": _SOCKET, "start": 0, "end": run.receiver_seconds, "seconds": run.seconds,
                "bytes": run.bytes_received, "bits_per_second": received_bps, "sender": True}
    return {
        "streams": [{"sender": sender, "receiver": receiver}],
        "sum_sent": {"start": 0, "end": run.seconds, "seconds": run.seconds, "bytes": run.bytes_sent,
                     "bits_per_second": sent_bps, "retransmits": run.retransmits, "sender": True},
        "sum_received": {"start": 0, "end": run.receiver_seconds, "seconds": run.receiver_seconds,
                         "bytes": run.bytes_received, "bits_per_second": received_bps, "sender": True},
        "cpu_utilization_percent": _cpu(sent_bps),
        "sender_tcp_congestion": run.congestion,
        "receiver_tcp_congestion": run.congestion,
    }


def _cpu(bps: float) -> dict:
    load = min(99.0, 3.0 + bps / 3.2e8)
    return {"host_total": round(load, 6), "host_user": round(load * 0.04, 6), "host_system": round(load * 0.96, 6),
            "remote_total": round(load * 0.7, 6), "remote_user": round(load * 0.05, 6),
            "remote_system": round(load * 0.65, 6)}


def iperf3_payload(run: Run, path: Path) -> dict:
    """The JSON ``iperf3 -c DST -t 10 -J`` prints for ``run`` on ``path``."""
    src = path.src
    if not run.ok:
        return {"start": {"connected": [], "version": f"iperf {src.iperf_version}",
                          "system_info": f"Linux {src.name.split('.')[0]} {src.kernel} #1 SMP x86_64"},
                "intervals": [], "end": {}, "error": run.error}
    cookie = stable_uuid(path.src.name, path.dst.name, run.time).replace("-", "")[:36].ljust(36, "a")
    pmtu = run.pmtu if _has_pmtu(src.iperf_version) else None
    return {"start": _start(run, path, cookie), "intervals": [_interval(i, pmtu) for i in run.intervals], "end": _end(run)}
