"""pscheduler results of simulated tests: throughput (iperf3 tool), latencybg (powstream) and
trace (traceroute / paris-traceroute), in the run envelope or the archiver-input shape a host
archives, with times in the host's local zone as pscheduler writes them.

>>> import numpy as np
>>> from pathwatch.sim.measure_latency import LatencyResult
>>> from pathwatch.sim.mesh import build_mesh
>>> path = build_mesh(3, np.random.default_rng(1)).paths[0]
>>> result = LatencyResult(1767571200.0, 6000, 2, 0, 0, {"21.10": 5998}, 1.2, 246)
>>> payload = latency_payload(result, path, window_s=600)
>>> run = payload.get("result", payload) if "test" not in payload else payload
>>> run["test"]["type"], run["result"]["packets-lost"], run["result"]["histogram-ttl"]
('latencybg', 2, {'246': 5998})
"""

from __future__ import annotations

from .clock import iso_duration, local_iso, stable_uuid
from .measure_latency import LatencyResult
from .measure_throughput import Run
from .measure_trace import Trace
from .mesh import Host, Path

_TOOL_VERSIONS = {"traceroute": "2.1.0", "paris-traceroute": "0.92"}
_FLAG_ERRORS = {"!H": "host-unreachable", "!N": "net-unreachable"}


def _envelope(host: Host, path: Path, test: dict, tool: str, version: str, start: float, seconds: float,
              result: dict, participants: list[str]) -> dict:
    """A pscheduler run wrapped the way ``host`` archives it."""
    zone = host.site.utc_offset_h
    run = {
        "id": stable_uuid(host.name, test["type"], path.dst.name, start),
        "schedule": {"start": local_iso(start, zone, micro=False), "duration": iso_duration(round(seconds))},
        "test": test,
        # perfSONAR 4.x nodes (the ones still on iperf 3.9) archive the tool as a bare name
        "tool": {"name": tool, "version": version} if host.iperf_version != "3.9" else tool,
        "run": {"start-time": local_iso(start, zone), "end-time": local_iso(start + seconds, zone)},
        "participants": participants if host.archiver == "run" else [{"host": p} for p in participants],
        "result": result,
    }
    if host.archiver == "run":
        return run
    return {"data": {"url": f"https://archive.{host.site.code}.example/logstash"}, "result": run,
            "attempts": 1, "last-attempt": local_iso(start + seconds + 5, zone, micro=False)}


def _spec(path: Path, **extra) -> dict:
    return {"schema": 1, "source": path.src.name, "dest": path.dst.name, **extra}


def throughput_payload(run: Run, path: Path) -> dict:
    """pscheduler's throughput result for ``run``, as its iperf3 tool reports it."""
    test = {"type": "throughput", "spec": _spec(path, duration=iso_duration(len(run.intervals) or 10), **{"ip-version": 4})}
    if not run.ok:
        result = {"schema": 1, "succeeded": False, "error": f"iperf3 returned an error: error - {run.error}"}
    else:
        result = _throughput_result(run)
    return _envelope(path.src, path, test, "iperf3", path.src.iperf_version, run.time, 25.0, result,
                     [path.src.name, path.dst.name])


def _throughput_result(run: Run) -> dict:
    intervals = []
    for i in run.intervals:
        seconds = i.end - i.start
        numbers = {"start": round(i.start, 6), "end": round(i.end, 6), "throughput-bytes": i.bytes,
                   "throughput-bits": i.bytes * 8 / seconds, "retransmits": i.retransmits}
        stream = {"stream-id": 5, **numbers, "tcp-window-size": i.cwnd, "rtt": i.rtt_us, "omitted": False}
        intervals.append({"streams": [stream], "summary": {**numbers, "omitted": False}})
    rtt = round(sum(i.rtt_us for i in run.intervals) / len(run.intervals))
    totals = {"start": 0, "end": run.seconds, "throughput-bytes": run.bytes_sent,
              "throughput-bits": run.bytes_sent * 8 / run.seconds, "retransmits": run.retransmits}
    return {
        "schema": 1, "succeeded": True, "mss": run.mss, "mtu": run.pmtu,
        "tcp-window-size": max(i.cwnd for i in run.intervals),
        "intervals": intervals,
        "summary": {
            "streams": [{"stream-id": 5, **totals, "rtt": rtt}],
            "summary": {**totals, "receiver-throughput-bits": run.bytes_received * 8 / run.receiver_seconds, "rtt": rtt},
        },
    }


def latency_payload(result: LatencyResult, path: Path, *, window_s: int) -> dict:
    """A latencybg (powstream) result for one window."""
    received = result.sent - result.lost
    spec = _spec(path, **{"packet-interval": round(window_s / result.sent, 6), "bucket-width": 0.0001, "flip": False})
    body = {
        "schema": 1, "succeeded": True, "packets-sent": result.sent, "packets-received": received,
        "packets-lost": result.lost, "packets-duplicated": result.duplicates, "packets-reordered": result.reordered,
        "max-clock-error": result.clock_error_ms, "histogram-latency": result.histogram,
        "histogram-ttl": {str(result.ttl): received} if received else {},
    }
    return _envelope(path.src, path, {"type": "latencybg", "spec": spec}, "powstream", path.src.powstream_version,
                     result.time, window_s, body, [path.src.name, path.dst.name])


def _hop(hop) -> dict:
    if hop.ip is None:
        return {}
    entry: dict = {"ip": hop.ip}
    if hop.hostname:
        entry["hostname"] = hop.hostname + "."
    entry["rtt"] = iso_duration(hop.rtt_ms / 1000.0)
    if hop.asn is not None:
        entry["as"] = {"number": hop.asn, "owner": hop.owner}
    if hop.flag:
        entry["error"] = _FLAG_ERRORS[hop.flag]
    return entry


def trace_payload(trace: Trace, path: Path) -> dict:
    """A pscheduler trace result (small probes: it never sees MTU trouble)."""
    tool = path.src.trace_tool
    extra = {"algorithm": "paris-traceroute"} if tool == "paris-traceroute" else {}
    result = {"schema": 1, "succeeded": True, "paths": [[_hop(h) for h in trace.hops]]}
    return _envelope(path.src, path, {"type": "trace", "spec": _spec(path, **extra)}, tool, _TOOL_VERSIONS[tool],
                     trace.time, 20.0, result, [path.src.name])
