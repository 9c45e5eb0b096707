"""RIPE Atlas traceroute results (the measurement API's JSON, one result per object).

Field map: ``src_addr`` → ``source``/``source_ip``, ``dst_name`` → ``destination`` and
``dst_addr`` → ``destination_ip``, ``timestamp`` (Unix s) → ``time``, ``af`` →
``ip_version``, ``proto`` → ``protocol``, ``prb_id``/``msm_id`` → ``probe_id``/
``measurement_id``, ``fw`` → ``tool_version``. Each ``result[]`` entry is one hop: the first
address that answered is ``ip`` (others go to ``other_ips``), ``rtt_ms`` is the median RTT
of its answers, ``err`` becomes ``!X`` as traceroute prints it, ``mtu`` (ICMP frag-needed)
the hop's ``mtu``. Hop 255 is Atlas's marker for a trace that gave up and is kept as is.
"""

from __future__ import annotations

from typing import Any

from ..build import ip_version, same_address, trace_record
from ..context import Context
from ..errors import ParseError
from ..fields import check, epoch_time, integer, need, number, obj, opt, plain_amount
from ..registry import Format
from ._stats import median


def looks_like(payload: dict) -> bool:
    return payload.get("type") == "traceroute" and ("prb_id" in payload or "msm_id" in payload)


def _hop(entry: Any, where: str) -> dict[str, Any]:
    entry = obj(entry, where)
    ttl = integer(entry, "hop", where, minimum=1)
    if ttl > 255:
        raise ParseError(where + ".hop", f"must be <= 255, got {ttl}")
    hop: dict[str, Any] = {"ttl": ttl, "ip": None}
    if "error" in entry:
        hop["error"] = str(entry["error"])
        return hop
    rtts: dict[str, list[float]] = {}
    order: list[str] = []
    for index, reply in enumerate(need(entry, "result", list, where)):
        if reply.__class__ is not dict:
            obj(reply, f"{where}.result[{index}]")
        if "from" not in reply:  # {"x": "*"}: no answer to this probe
            continue
        address, rtt = reply["from"], reply.get("rtt")
        if address.__class__ is not str or not (rtt is None or plain_amount(rtt)):  # else as they are
            at = f"{where}.result[{index}]"
            address = need(reply, "from", str, at)
            rtt = number(reply, "rtt", at, required=False, minimum=0)
        if address not in rtts:
            rtts[address] = []
            order.append(address)
        if rtt is not None:
            rtts[address].append(rtt)
        if "err" in reply and "error" not in hop:
            err = reply["err"]
            hop["error"] = f"!{err}" if isinstance(err, str) else f"!<{integer(reply, 'err', f'{where}.result[{index}]')}>"
        if "mtu" in reply:
            hop["mtu"] = integer(reply, "mtu", f"{where}.result[{index}]", minimum=1)
    if order:
        hop["ip"] = order[0]
        hop["other_ips"] = order[1:]
        hop["rtt_ms"] = median(rtts[order[0]]) if rtts[order[0]] else None
    return hop


def parse(payload: dict, ctx: Context) -> list:
    """One trace record for one Atlas traceroute result."""
    dst_addr = opt(payload, "dst_addr", str, "")
    dst_name = opt(payload, "dst_name", str, "")
    src_addr = opt(payload, "src_addr", str, "")
    hops = [_hop(entry, f"result[{i}]") for i, entry in enumerate(need(payload, "result", list, ""))]
    address_family = integer(payload, "af", "", required=False)
    firmware = payload.get("fw")
    fields: dict[str, Any] = {
        "source": ctx.endpoint(ctx.source, src_addr or opt(payload, "from", str, "") or None),
        "destination": ctx.endpoint(ctx.destination, dst_addr if ip_version(dst_name) else dst_name or dst_addr),
        "source_ip": src_addr or None,
        "destination_ip": dst_addr,
        "time": epoch_time(payload, "timestamp", ""),
        "tool": "ripe-atlas",
        "tool_version": str(check(firmware, (int, str), "fw")) if firmware is not None else None,
        "ip_version": address_family if address_family in (4, 6) else None,
        "protocol": (opt(payload, "proto", str, "") or "").lower() or None,
        "probe_id": integer(payload, "prb_id", ""),
        "measurement_id": integer(payload, "msm_id", "", required=False),
        "reached": any(same_address(ip, dst_addr) for h in hops for ip in [h["ip"], *h.get("other_ips", [])]),
        "pmtu_bytes": min((h["mtu"] for h in hops if h.get("mtu")), default=None),
    }
    return [trace_record(ctx, fields, hops)]


FORMAT = Format(
    name="atlas",
    payload="json",
    summary="RIPE Atlas traceroute results (API JSON, one object or an array)",
    looks_like=looks_like,
    parse=parse,
    example="atlas.jsonl",
)
