"""pscheduler results: what perfSONAR's archivers (syslog, HTTP, Kafka, ...) receive.

Accepted shapes: the archiver input ``{"data": ..., "result": {<run>}}``, the run envelope
``{id, schedule{start,duration}, test{type,spec}, tool, run{start-time}, participants, result}``
and a bare test result (``{succeeded, paths}``, ``{succeeded, summary, intervals}``,
``{succeeded, packets-sent, ...}``) whose type is told by its fields. Test types
``throughput``, ``latency``, ``latencybg`` and ``trace`` are read; any other type is
rejected naming it. ``tool`` may be a string or ``{name, version}``.

Field map: throughput ``summary.summary.{throughput-bits, receiver-throughput-bits,
retransmits, rtt (µs), tcp-window-size, sent, lost, jitter (ms)}``; latency ``packets-*``,
``histogram-latency`` {ms: count} (delay statistics), ``histogram-ttl``, ``max-clock-error``
(ms); trace ``paths[0][{ip, hostname, rtt (ISO 8601 duration), as{number, owner}, error, mtu}]``.
Naive times (no zone) are taken as UTC. A reverse throughput test or a flipped latency test
swaps source and destination so that the record's source always sends.
"""

from __future__ import annotations

import re
from typing import Any

import isodate

from pathwatch.contract import timefmt

from ..build import ip_version, record, trace_record
from ..context import Context
from ..errors import ParseError
from ..fields import check, integer, join, need, number, obj, opt, plain_amount, plain_count, cut, shown, whole_number
from ..registry import Format
from ._stats import histogram_stats

SUPPORTED_TYPES = ("throughput", "latency", "latencybg", "trace")
_KIND = {"throughput": "throughput", "latency": "latency", "latencybg": "latency", "trace": "trace"}
_US_PER_MS = 1000.0
# The durations pscheduler writes (``PT0.000346S``): whole seconds and microseconds, read without isodate.
_SECONDS = re.compile(r"PT(\d{1,6})(?:\.(\d{1,6}))?S", re.ASCII)


def _bare_type(result: dict) -> str | None:
    """Test type of a bare result, told by its fields."""
    if "paths" in result:
        return "trace"
    if "summary" in result and "intervals" in result:
        return "throughput"
    if "packets-sent" in result or "histogram-latency" in result:
        return "latency"
    return None


def looks_like(payload: dict) -> bool:
    inner = payload.get("result")
    if isinstance(inner, dict) and isinstance(inner.get("test"), dict):
        return True  # archiver input
    if isinstance(payload.get("test"), dict) and "type" in payload["test"]:
        return True  # run envelope (or a task without a result, rejected as such)
    return "succeeded" in payload and _bare_type(payload) is not None


def _unwrap(payload: dict) -> tuple[dict, str]:
    """(run envelope, field prefix) from any accepted shape."""
    inner = payload.get("result")
    if isinstance(inner, dict) and isinstance(inner.get("test"), dict):
        return inner, "result."
    if "test" in payload:
        return payload, ""
    return {"result": payload}, ""


def _tool(run: dict, where: str) -> tuple[str | None, str | None]:
    tool = run.get("tool")
    if tool is None:
        return None, None
    if isinstance(tool, str):
        return tool, None
    tool = obj(tool, where + "tool")
    return need(tool, "name", str, where + "tool"), opt(tool, "version", str, where + "tool")


def _participant(run: dict, index: int, where: str) -> str | None:
    participants = opt(run, "participants", list, where.rstrip("."), [])
    if len(participants) <= index:
        return None
    entry = participants[index]
    field = f"{where}participants[{index}]"
    if isinstance(entry, dict):
        return opt(entry, "host", str, field)
    return check(entry, str, field) if entry is not None else None


def _time(run: dict, where: str, ctx: Context) -> str | None:
    inner_run = opt(run, "run", dict, where.rstrip("."), {})
    schedule = opt(run, "schedule", dict, where.rstrip("."), {})
    for container, key, field in (
        (inner_run, "start-time", where + "run.start-time"),
        (run, "start-time", where + "start-time"),
        (schedule, "start", where + "schedule.start"),
    ):
        value = container.get(key)
        if value is not None:
            try:
                return timefmt.normalize(check(value, str, field), assume_utc=True)
            except ValueError as error:
                raise ParseError(field, f"not an ISO 8601 time: {error}") from None
    return ctx.collected_at


def _duration_ms(value: Any, field: str) -> float:
    """Milliseconds of an ISO 8601 duration, to the microsecond as isodate's timedelta has it.

    >>> _duration_ms("PT0.25S", "rtt"), _duration_ms("PT1M0.5S", "rtt")
    (250.0, 60500.0)
    >>> try:
    ...     _duration_ms("PT99999999999999999999S", "rtt")
    ... except ParseError as error:
    ...     print(error)
    rtt: not an ISO 8601 duration: 'PT99999999999999999999S' (Python int too large to convert to C int)
    """
    if value.__class__ is str and (seconds := _SECONDS.fullmatch(value)):
        whole, fraction = seconds.groups()
        return (int(whole) * 1_000_000 + int((fraction or "").ljust(6, "0"))) / 1_000_000 * 1000.0
    try:
        return isodate.parse_duration(check(value, str, field)).total_seconds() * 1000.0
    except (isodate.ISO8601Error, ValueError, AttributeError, OverflowError) as error:  # Overflow: past timedelta's range
        raise ParseError(field, f"not an ISO 8601 duration: {shown(value)} ({error})") from None


def _throughput(result: dict, spec: dict, where: str) -> dict[str, Any]:
    total = need(need(result, "summary", dict, where), "summary", dict, where + ".summary")
    at = where + ".summary.summary"
    rtt = number(total, "rtt", at, required=False, minimum=0)
    window = integer(total, "tcp-window-size", at, required=False)
    fields: dict[str, Any] = {
        "throughput_bps": number(total, "throughput-bits", at, minimum=0),
        "receiver_throughput_bps": number(total, "receiver-throughput-bits", at, required=False, minimum=0),
        "retransmits": integer(total, "retransmits", at, required=False),
        "rtt_ms": rtt / _US_PER_MS if rtt else None,
        "tcp_window_bytes": window or integer(result, "tcp-window-size", where, required=False),
        "sent_packets": integer(total, "sent", at, required=False),
        "lost_packets": integer(total, "lost", at, required=False),
        "jitter_ms": number(total, "jitter", at, required=False, minimum=0),
        "mss_bytes": integer(result, "mss", where, required=False) or integer(result, "mss-size", where, required=False),
        "mtu_bytes": integer(result, "mtu", where, required=False),
    }
    start = number(total, "start", at, required=False, minimum=0)
    end = number(total, "end", at, required=False, minimum=0)
    fields["duration_s"] = end - start if start is not None and end is not None and end >= start else None
    intervals = [_interval(entry, f"{where}.intervals[{index}]") for index, entry in enumerate(opt(result, "intervals", list, where, []))]
    fields["intervals"] = intervals
    fields["protocol"] = "udp" if spec.get("udp") else "tcp"
    fields["streams"] = integer(spec, "parallel", "test.spec", required=False, minimum=1)
    # The rate the test asked for, in bits/s (absent: TCP as fast as it goes).
    fields["target_bitrate_bps"] = number(spec, "bandwidth", "test.spec", required=False, minimum=0) or None
    return fields


def _interval(entry: Any, where: str) -> dict[str, Any]:
    """One ``intervals[]`` entry of a throughput result (its ``summary``).

    Plain values (a count, a finite amount, a bool) are taken as they are; if any is not, the
    field helpers read the summary, converting values or raising the ParseError naming the first.
    """
    if entry.__class__ is not dict:
        entry = obj(entry, where)
    summary = entry.get("summary")
    if summary.__class__ is not dict:
        summary = need(entry, "summary", dict, where)
    get = summary.get
    cwnd, rtt, start, end, rate = get("tcp-window-size"), get("rtt"), get("start"), get("end"), get("throughput-bits")
    retransmits, omitted = get("retransmits"), get("omitted")
    if not ((cwnd is None or plain_count(cwnd)) and (rtt is None or plain_amount(rtt)) and plain_amount(start)
            and plain_amount(end) and plain_amount(rate) and (retransmits is None or plain_count(retransmits))
            and (omitted is None or omitted.__class__ is bool)):
        s_where = where + ".summary"
        cwnd = integer(summary, "tcp-window-size", s_where, required=False)
        rtt = number(summary, "rtt", s_where, required=False, minimum=0)
        start = number(summary, "start", s_where, minimum=0)
        end = number(summary, "end", s_where, minimum=0)
        rate = number(summary, "throughput-bits", s_where, minimum=0)
        retransmits = integer(summary, "retransmits", s_where, required=False)
        omitted = opt(summary, "omitted", bool, s_where, False)
    return {
        "start_s": start,
        "end_s": end,
        "throughput_bps": rate,
        "retransmits": retransmits,
        "cwnd_bytes": cwnd,
        "rtt_ms": rtt / _US_PER_MS if rtt else None,
        "omitted": bool(omitted),
    }


def _latency(result: dict, where: str) -> dict[str, Any]:
    sent = integer(result, "packets-sent", where, required=False)
    received = integer(result, "packets-received", where, required=False)
    lost = integer(result, "packets-lost", where, required=False)
    if lost is None and sent is not None and received is not None:
        lost = max(0, sent - received)
    histogram = _histogram(opt(result, "histogram-latency", dict, where, {}), where + ".histogram-latency")
    ttls = _ttls(opt(result, "histogram-ttl", dict, where, {}), where + ".histogram-ttl")
    fields = {
        "one_way": True,
        "packets_sent": sent,
        "packets_received": received,
        "packets_lost": lost,
        "loss_ratio": lost / sent if sent and lost is not None and lost <= sent else None,
        "duplicates": integer(result, "packets-duplicated", where, required=False),
        "reordered": integer(result, "packets-reordered", where, required=False),
        "max_clock_error_ms": number(result, "max-clock-error", where, required=False, minimum=0),
        "ttl_min": min(ttls) if ttls else None,
        "ttl_max": max(ttls) if ttls else None,
    }
    fields.update(histogram_stats(histogram))
    return fields


def _histogram(buckets: dict, where: str) -> dict[float, int]:
    """{delay ms: count} of ``histogram-latency``; ParseError naming the first bucket that is not a
    number of milliseconds or whose count is not a whole number."""
    histogram: dict[float, int] = {}
    for bucket, count in buckets.items():
        try:
            value = float(bucket)
        except ValueError:
            raise ParseError(join(where, bucket), "bucket is not a number of milliseconds") from None
        histogram[value] = count if plain_count(count) else integer({bucket: count}, bucket, where)
    return histogram


def _ttls(counts: dict, where: str) -> list[int]:
    """The TTLs ``histogram-ttl`` saw packets arrive with."""
    ttls = []
    for ttl, count in counts.items():
        if not ttl.isdigit():  # whole_number refuses what int() does: '²', over 4300 digits
            raise ParseError(join(where, cut(ttl)), "TTL is not a whole number")
        if not plain_count(count):
            count = integer({ttl: count}, ttl, where)
        if count:
            ttls.append(whole_number(ttl, join(where, cut(ttl))))
    return ttls


def _hops(result: dict, where: str) -> list[dict[str, Any]]:
    paths = need(result, "paths", list, where)
    if not paths:
        return []
    hops = []
    for index, hop in enumerate(check(paths[0], list, where + ".paths[0]")):
        at = f"{where}.paths[0][{index}]"
        hop = obj(hop, at)
        get = hop.get
        ip, hostname, rtt, as_info, mtu, error = get("ip"), get("hostname"), get("rtt"), get("as"), get("mtu"), get("error")
        if as_info.__class__ is dict:
            asn, as_owner = as_info.get("number"), as_info.get("owner")
        else:
            as_info, asn, as_owner = opt(hop, "as", dict, at, {}), None, None
        # Plain values as pscheduler writes them go straight in; anything else gets the helpers' checks.
        if not (ip is None or ip.__class__ is str):
            ip = opt(hop, "ip", str, at)
        if not (hostname is None or hostname.__class__ is str):
            hostname = opt(hop, "hostname", str, at)
        rtt_ms = _duration_ms(rtt, at + ".rtt") if rtt is not None else None
        if not (asn is None or (asn.__class__ is int and asn >= 0)):
            asn = integer(as_info, "number", at + ".as", required=False)
        if not (as_owner is None or as_owner.__class__ is str):
            as_owner = opt(as_info, "owner", str, at + ".as")
        if not (mtu is None or (mtu.__class__ is int and mtu >= 0)):
            mtu = integer(hop, "mtu", at, required=False)
        if not (error is None or error.__class__ is str):
            error = opt(hop, "error", str, at)
        hops.append(
            {"ttl": index + 1, "ip": ip, "hostname": hostname, "rtt_ms": rtt_ms, "asn": asn, "as_owner": as_owner,
             "mtu": mtu, "error": error}  # fmt: skip
        )
    return hops


def parse(payload: dict, ctx: Context) -> list:
    """One record for one pscheduler run."""
    run, where = _unwrap(payload)
    result = run.get("result-merged", run.get("result"))
    result_where = where + ("result-merged" if "result-merged" in run else "result")
    result = obj(result, result_where) if result is not None else None
    test = opt(run, "test", dict, where.rstrip("."))
    if test is not None:
        test_type = need(test, "type", str, where + "test")
        spec = opt(test, "spec", dict, where + "test", {})
    else:
        test_type = _bare_type(result or {})
        spec = {}
        if test_type is None:
            raise ParseError("result", "cannot tell the test type of this bare result")
    if test_type not in SUPPORTED_TYPES:
        raise ParseError(
            where + "test.type",
            f"unsupported test type {test_type!r}: pathwatch reads {', '.join(SUPPORTED_TYPES)} results",
        )
    if result is None:
        raise ParseError(result_where, "missing: a task specification without a run result has no measurement")
    kind = _KIND[test_type]
    tool, tool_version = _tool(run, where)
    payload_source = opt(spec, "source", str, where + "test.spec") or _participant(run, 0, where)
    payload_dest = opt(spec, "dest", str, where + "test.spec") or _participant(run, 1, where)
    source = ctx.endpoint(ctx.source, payload_source)
    destination = ctx.endpoint(ctx.destination, payload_dest)
    swapped = bool(spec.get("reverse")) if kind == "throughput" else bool(spec.get("flip"))
    if swapped:
        source, destination = destination, source
    succeeded = opt(result, "succeeded", bool, result_where, True)
    error = result.get("error")
    fields: dict[str, Any] = {
        "source": source,
        "destination": destination,
        "time": _time(run, where, ctx),
        "tool": tool or {"throughput": "iperf3", "latency": "owping", "trace": "traceroute"}[kind],
        "tool_version": tool_version,
        "ip_version": spec.get("ip-version") if spec.get("ip-version") in (4, 6) else None,
        "succeeded": succeeded,
        "error": error if isinstance(error, str) and error else None,
    }
    if kind == "throughput":
        fields["reverse"] = bool(spec.get("reverse"))
    if not succeeded:
        if kind == "latency":
            fields["one_way"] = True
        if kind == "trace":
            return [trace_record(ctx, fields, [])]
        return [record(kind, ctx, fields)]
    if kind == "throughput":
        fields.update(_throughput(result, spec, result_where))
        return [record(kind, ctx, fields)]
    if kind == "latency":
        fields.update(_latency(result, result_where))
        return [record(kind, ctx, fields)]
    hops = _hops(result, result_where)
    target = destination if ip_version(destination) else None
    fields["destination_ip"] = target
    if target is None:
        fields["reached"] = _reached_by_name(hops, destination)
    fields["pmtu_bytes"] = min((h["mtu"] for h in hops if h["mtu"]), default=None)
    return [trace_record(ctx, fields, hops)]


def _reached_by_name(hops: list[dict[str, Any]], destination: str | None) -> bool | None:
    """Reachability of a destination given by name: its name on the last answering hop says yes;
    a trace that ends in three or more silent hops, or in an unreachable error, says no; else unknown.

    >>> _reached_by_name([{"ip": "10.0.0.1", "hostname": "ps.example.org.", "error": None}], "PS.example.org")
    True
    >>> _reached_by_name([{"ip": "10.0.0.1", "hostname": None, "error": None}] + [{"ip": None}] * 3, "ps.example.org")
    False
    """
    answering = [hop for hop in hops if hop.get("ip")]
    if not answering or not destination:
        return None
    name = (answering[-1].get("hostname") or "").rstrip(".").lower()
    if name and name == destination.rstrip(".").lower():
        return True
    trailing_silence = len(hops) - 1 - max(i for i, hop in enumerate(hops) if hop.get("ip"))
    if trailing_silence >= 3 or answering[-1].get("error"):
        return False
    return None


FORMAT = Format(
    name="pscheduler",
    payload="json",
    summary="pscheduler results: archiver input, run envelopes or bare results (throughput, latency, latencybg, trace)",
    looks_like=looks_like,
    parse=parse,
    example="pscheduler.jsonl",
)
