"""``iperf3 -J`` output: TCP and UDP, single and parallel streams, reverse, and failed runs.

Field map (iperf3 → record): ``end.sum_sent.bits_per_second`` → ``throughput_bps``,
``end.sum_received.bits_per_second`` → ``receiver_throughput_bps``, ``retransmits`` →
``retransmits``, ``end.streams[].sender.mean_rtt`` (µs) → ``rtt_ms``, ``snd_cwnd`` →
``cwnd_bytes``, ``end.streams[].sender.max_snd_wnd`` (summed) → ``receive_window_bytes``,
``start.sndbuf_actual`` (forward TCP runs) → ``send_buffer_bytes``, UDP
``end.sum.{jitter_ms, lost_packets, packets}``. The record's source is
the host that sent the data: the server for a reverse (``-R``) run.
"""

from __future__ import annotations

from typing import Any

from ..build import record
from ..context import Context
from ..errors import ParseError
from ..fields import epoch_time, integer, join, need, number, obj, opt, plain_amount, plain_count
from ..registry import Format

_US_PER_MS = 1000.0


def looks_like(payload: dict) -> bool:
    """iperf3 output has a ``start`` object and an ``intervals`` or ``end`` member."""
    return isinstance(payload.get("start"), dict) and ("intervals" in payload or "end" in payload)


def _endpoints(start: dict, ctx: Context) -> tuple[str | None, str | None, str | None, str | None]:
    """(client name, server name, client ip, server ip) as the test ran."""
    connected = opt(start, "connected", list, "start", [])
    local_ip = remote_ip = None
    if connected:
        first = obj(connected[0], "start.connected[0]")
        local_ip = opt(first, "local_host", str, "start.connected[0]")
        remote_ip = opt(first, "remote_host", str, "start.connected[0]")
    if "accepted_connection" in start:  # the server's own output: the peer is the client
        client_ip, server_ip = remote_ip, local_ip
        payload_server = local_ip
    else:
        client_ip, server_ip = local_ip, remote_ip
        connecting_to = opt(start, "connecting_to", dict, "start", {})
        payload_server = opt(connecting_to, "host", str, "start.connecting_to") or server_ip
    client = ctx.endpoint(ctx.source, client_ip)
    server = ctx.endpoint(ctx.destination, payload_server)
    return client, server, client_ip, server_ip


def _test_time(start: dict, ctx: Context) -> str | None:
    stamp = opt(start, "timestamp", dict, "start")
    if stamp is None:
        return ctx.collected_at
    return epoch_time(stamp, "timesecs", "start.timestamp")


def _interval(entry: Any, where: str) -> dict[str, Any]:
    """One ``intervals[]`` entry: the summed rate, retransmits, and the streams' cwnd and mean RTT.

    A plain value (iperf3's own: a count, a finite amount, a bool) is taken as it is; any other
    goes to the field helpers, which convert it or raise the ParseError naming it, in field order.
    """
    if entry.__class__ is not dict:
        entry = obj(entry, where)
    total = entry.get("sum")
    if total.__class__ is not dict:
        total = need(entry, "sum", dict, where)
    streams = entry.get("streams")
    if streams.__class__ is not list:
        streams = opt(entry, "streams", list, where, [])
    cwnds = []
    rtts = []
    for index, stream in enumerate(streams):
        plain = stream.__class__ is dict
        if plain:
            cwnd, rtt = stream.get("snd_cwnd"), stream.get("rtt")
            plain = (cwnd is None or plain_count(cwnd)) and (rtt is None or plain_amount(rtt))
        if not plain:
            stream_where = join(join(where, "streams"), index)
            stream = obj(stream, stream_where)
            cwnd = integer(stream, "snd_cwnd", stream_where, required=False)
            rtt = number(stream, "rtt", stream_where, required=False, minimum=0)
        if cwnd:
            cwnds.append(cwnd)
        if rtt:
            rtts.append(rtt / _US_PER_MS)
    get = total.get
    start, end, rate, retransmits, omitted = get("start"), get("end"), get("bits_per_second"), get("retransmits"), get("omitted")
    if not (plain_amount(start) and plain_amount(end) and plain_amount(rate)
            and (retransmits is None or plain_count(retransmits)) and (omitted is None or omitted.__class__ is bool)):
        sum_where = join(where, "sum")
        start = number(total, "start", sum_where, minimum=0)
        end = number(total, "end", sum_where, minimum=0)
        rate = number(total, "bits_per_second", sum_where, minimum=0)
        retransmits = integer(total, "retransmits", sum_where, required=False)
        omitted = opt(total, "omitted", bool, sum_where, False)
    return {
        "start_s": start,
        "end_s": end,
        "throughput_bps": rate,
        "retransmits": retransmits,
        "cwnd_bytes": sum(cwnds) if cwnds else None,
        "rtt_ms": sum(rtts) / len(rtts) if rtts else None,
        "omitted": bool(omitted),
    }


def _tcp_end(end: dict) -> dict[str, Any]:
    sent = need(end, "sum_sent", dict, "end")
    received = opt(end, "sum_received", dict, "end", {})
    means, mins, maxes, windows, receive_windows = [], [], [], [], []
    for index, stream in enumerate(opt(end, "streams", list, "end", [])):
        where = f"end.streams[{index}]"
        sender = opt(obj(stream, where), "sender", dict, where)
        if sender is None:
            continue
        where = f"{where}.sender"
        mean = number(sender, "mean_rtt", where, required=False, minimum=0)
        if mean:  # 0 means "not measured" (e.g. the remote sender of a reverse run)
            means.append(mean / _US_PER_MS)
            mins.append(number(sender, "min_rtt", where, required=False, minimum=0) or mean)
            maxes.append(number(sender, "max_rtt", where, required=False, minimum=0) or mean)
        window = integer(sender, "max_snd_cwnd", where, required=False)
        if window:
            windows.append(window)
        receive_window = integer(sender, "max_snd_wnd", where, required=False)   # iperf3 >= 3.11
        if receive_window:
            receive_windows.append(receive_window)
    return {
        "throughput_bps": number(sent, "bits_per_second", "end.sum_sent", minimum=0),
        "receiver_throughput_bps": number(received, "bits_per_second", "end.sum_received", required=False, minimum=0),
        "retransmits": integer(sent, "retransmits", "end.sum_sent", required=False),
        "duration_s": number(sent, "seconds", "end.sum_sent", required=False, minimum=0),
        "rtt_ms": sum(means) / len(means) if means else None,
        "rtt_min_ms": min(mins) / _US_PER_MS if mins else None,
        "rtt_max_ms": max(maxes) / _US_PER_MS if maxes else None,
        "tcp_window_bytes": sum(windows) if windows else None,
        "receive_window_bytes": sum(receive_windows) if receive_windows else None,
        "congestion_control": opt(end, "sender_tcp_congestion", str, "end"),
    }


def _udp_end(end: dict) -> dict[str, Any]:
    # iperf >= 3.8 has sum_sent/sum_received; older versions only "sum" (receiver's view).
    total = need(end, "sum", dict, "end")
    sent = opt(end, "sum_sent", dict, "end", total)
    received = opt(end, "sum_received", dict, "end")
    where_sent = "end.sum_sent" if "sum_sent" in end else "end.sum"
    return {
        "throughput_bps": number(sent, "bits_per_second", where_sent, minimum=0),
        "receiver_throughput_bps": number(received, "bits_per_second", "end.sum_received", minimum=0)
        if received
        else None,
        "duration_s": number(sent, "seconds", where_sent, required=False, minimum=0),
        "jitter_ms": number(total, "jitter_ms", "end.sum", required=False, minimum=0),
        "lost_packets": integer(total, "lost_packets", "end.sum", required=False),
        "sent_packets": integer(total, "packets", "end.sum", required=False),
    }


def _pmtu(intervals: list) -> int | None:
    """The path MTU iperf3 (>= 3.11) reports per stream in the last interval."""
    for entry in reversed(intervals):
        if isinstance(entry, dict):
            for stream in entry.get("streams") or []:
                if isinstance(stream, dict) and isinstance(stream.get("pmtu"), int) and stream["pmtu"] > 0:
                    return stream["pmtu"]
            return None
    return None


def parse(payload: dict, ctx: Context) -> list:
    """One throughput record for one iperf3 run."""
    start = need(payload, "start", dict, "")
    test_start = opt(start, "test_start", dict, "start", {})
    error = opt(payload, "error", str, "")
    client, server, client_ip, server_ip = _endpoints(start, ctx)
    reverse = bool(integer(test_start, "reverse", "start.test_start", required=False) or 0)
    protocol_text = opt(test_start, "protocol", str, "start.test_start")
    protocol = protocol_text.lower() if protocol_text else None
    if protocol not in (None, "tcp", "udp"):
        raise ParseError("start.test_start.protocol", f"expected TCP or UDP, got {protocol_text!r}")
    version = opt(start, "version", str, "start")
    fields: dict[str, Any] = {
        "source": server if reverse else client,
        "destination": client if reverse else server,
        "source_ip": server_ip if reverse else client_ip,
        "destination_ip": client_ip if reverse else server_ip,
        "time": _test_time(start, ctx),
        "tool": "iperf3",
        "tool_version": version.removeprefix("iperf ").strip() if version else None,
        "protocol": protocol,
        "streams": integer(test_start, "num_streams", "start.test_start", required=False, minimum=1),
        "reverse": reverse,
        "mss_bytes": integer(start, "tcp_mss_default", "start", required=False)
        or integer(start, "tcp_mss", "start", required=False),
        "succeeded": error is None,
        "error": error,
    }
    intervals = opt(payload, "intervals", list, "", [])
    end = opt(payload, "end", dict, "", {})
    if error is None:
        if not end:
            raise ParseError("end", "missing: the run reported no error and no end summary (truncated output?)")
        fields.update(_udp_end(end) if protocol == "udp" else _tcp_end(end))
        fields["intervals"] = [_interval(entry, f"intervals[{i}]") for i, entry in enumerate(intervals)]
        fields["mtu_bytes"] = _pmtu(intervals)
    if fields.get("duration_s") is None:
        fields["duration_s"] = number(test_start, "duration", "start.test_start", required=False, minimum=0)
    # -b: the rate iperf3 paced the test to (0: TCP as fast as it goes).
    fields["target_bitrate_bps"] = number(test_start, "target_bitrate", "start.test_start", required=False,
                                          minimum=0) or None
    if not reverse and protocol != "udp":
        # The client's socket buffer as the run began (iperf3 >= 3.2): the sender's in a forward run.
        fields["send_buffer_bytes"] = integer(start, "sndbuf_actual", "start", required=False) or None
    return [record("throughput", ctx, fields)]


FORMAT = Format(
    name="iperf3",
    payload="json",
    summary="iperf3 -J output (TCP/UDP, parallel streams, reverse, failed runs)",
    looks_like=looks_like,
    parse=parse,
    example="iperf3.jsonl",
)
