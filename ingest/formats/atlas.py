"""RIPE Atlas results (the measurement API's JSON, one result per object): traceroute and ping.

Both name their source by the probe, ``atlas-probe-<prb_id>`` (unless the envelope names it): a
probe behind NAT reports other private ``src_addr`` over time, so its address is kept as
``source_ip`` (``src_addr``, else the public ``from``), not used as its name. ``dst_name`` (else
``dst_addr``) names the destination, ``dst_addr`` is ``destination_ip``; ``timestamp`` (Unix s)
→ ``time``, ``af`` → ``ip_version``, ``fw`` → ``tool_version``. A result of another type
(``dns``, ``http``, ...) is rejected naming its type.

Traceroute: ``proto`` → ``protocol``, ``prb_id``/``msm_id`` → ``probe_id``/``measurement_id``.
Each ``result[]`` entry is one hop: the first address that answered is ``ip`` (others go to
``other_ips``), ``rtt_ms`` is the median RTT of its answers, ``err`` becomes ``!X`` as traceroute
prints it, ``mtu`` (ICMP frag-needed) the hop's ``mtu``. Hop 255 is Atlas's marker for a trace
that gave up and is kept as is.

Ping: one round-trip latency record. ``sent``/``rcvd``/``dup`` → ``packets_sent`` /
``packets_received`` / ``duplicates`` (the loss follows); the delays are those of the replies in
``result[]`` (``{"rtt": ms}``; ``{"x": "*"}`` is a packet lost, ``{"error": ...}`` one not sent,
``"dup": 1`` a duplicate reply, counted in ``dup`` only),
else the summary ``min``/``avg``/``max`` of early firmware (``-1``: no reply); the replies'
``ttl`` give ``ttl_min``/``ttl_max``. A run whose every packet failed to go out is a record with
``succeeded: false`` and the probe's errors. Firmware 1 named the destination ``name``/``addr``;
firmware 0 wrote numbers as strings: both are read.
"""

from __future__ import annotations

from typing import Any

from ..build import ip_version, record, same_address, trace_record
from ..context import Context
from ..errors import ParseError
from ..fields import check, cut, epoch_time, integer, need, number, obj, opt, plain_amount, text_number
from ..registry import Format
from ._stats import delay_stats, median


TYPES = ("traceroute", "ping")


def looks_like(payload: dict) -> bool:
    return payload.get("type") in TYPES and ("prb_id" in payload or "msm_id" in payload)


def _source(payload: dict, ctx: Context) -> tuple[str | None, str | None, int]:
    """(source name, source address, probe id): the probe names the source."""
    probe = integer(payload, "prb_id", "")
    address = opt(payload, "src_addr", str, "", "") or opt(payload, "srcaddr", str, "", "") or opt(payload, "from", str, "", "")
    return ctx.endpoint(ctx.source, f"atlas-probe-{probe}"), address or None, probe


def _destination(payload: dict, ctx: Context, address: str) -> str | None:
    """``dst_name`` unless it is an address (then the canonical ``dst_addr``), else ``dst_addr``."""
    name = opt(payload, "dst_name", str, "", "") or opt(payload, "name", str, "", "")
    return ctx.endpoint(ctx.destination, address if (ip_version(name) and address) else name or address or None)


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
    """One trace record for an Atlas traceroute result, one latency record for a ping result."""
    kind = need(payload, "type", str, "")
    if kind == "ping":
        return [_ping(payload, ctx)]
    if kind != "traceroute":
        raise ParseError("type", f"RIPE Atlas {cut(kind)!r} results are not read (only {' and '.join(TYPES)})")
    return [_traceroute(payload, ctx)]


def _traceroute(payload: dict, ctx: Context):
    dst_addr = opt(payload, "dst_addr", str, "")
    hops = [_hop(entry, f"result[{i}]") for i, entry in enumerate(need(payload, "result", list, ""))]
    source, source_ip, probe = _source(payload, ctx)
    fields: dict[str, Any] = {
        "source": source,
        "destination": _destination(payload, ctx, dst_addr or ""),
        "source_ip": source_ip,
        "destination_ip": dst_addr,
        "time": epoch_time(payload, "timestamp", ""),
        "tool": "ripe-atlas",
        "tool_version": _firmware(payload),
        "ip_version": _address_family(payload),
        "protocol": (opt(payload, "proto", str, "") or "").lower() or None,
        "probe_id": probe,
        "measurement_id": integer(payload, "msm_id", "", required=False),
        "reached": any(same_address(ip, dst_addr) for h in hops for ip in [h["ip"], *h.get("other_ips", [])]),
        "pmtu_bytes": min((h["mtu"] for h in hops if h.get("mtu")), default=None),
    }
    return trace_record(ctx, fields, hops)


def _ping(payload: dict, ctx: Context):
    address = opt(payload, "dst_addr", str, "", "") or opt(payload, "addr", str, "", "")
    source, source_ip, _ = _source(payload, ctx)
    sent, received = _count(payload, "sent"), _count(payload, "rcvd")
    if received > sent:
        raise ParseError("rcvd", f"more packets received ({received}) than sent ({sent})")
    rtts, ttls, errors = _replies(payload)
    if len(rtts) > received:
        raise ParseError("result", f"{len(rtts)} replies listed, but rcvd is {received}")
    fields: dict[str, Any] = {
        "source": source,
        "destination": _destination(payload, ctx, address),
        "source_ip": source_ip,
        "destination_ip": address or None,
        "time": epoch_time(payload, "timestamp", ""),
        "tool": "ripe-atlas",
        "tool_version": _firmware(payload),
        "ip_version": _address_family(payload) or ip_version(address),
        "one_way": False,
        "packets_sent": sent,
        "packets_received": received,
        "packets_lost": sent - received,
        "loss_ratio": (sent - received) / sent if sent else None,
        "duplicates": _count(payload, "dup", required=False),
        "ttl_min": min(ttls) if ttls else None,
        "ttl_max": max(ttls) if ttls else None,
    }
    if rtts or "result" in payload:
        fields.update(delay_stats(rtts))
    else:  # early firmware: the summary only (-1 where nothing came back)
        low, mean, high = (_amount(payload, key) for key in ("min", "avg", "max"))
        fields.update(delay_min_ms=low, delay_mean_ms=mean, delay_max_ms=high)
    if received == 0 and errors and len(errors) >= sent:  # no packet went out at all
        fields.update(succeeded=False, error="; ".join(dict.fromkeys(errors)))
    return record("latency", ctx, fields)


def _replies(payload: dict) -> tuple[list[float], list[int], list[str]]:
    """(reply RTTs in ms, reply TTLs, errors) of a ping result's ``result[]``."""
    rtts: list[float] = []
    ttls: list[int] = []
    errors: list[str] = []
    for index, entry in enumerate(opt(payload, "result", list, "", [])):
        where = f"result[{index}]"
        entry = obj(entry, where)
        if "error" in entry:
            errors.append(str(entry["error"]))
        elif entry.get("dup"):  # a duplicate reply: counted in dup, not a packet's delay
            number(entry, "rtt", where, required=False, minimum=0)
        elif "rtt" in entry:
            rtts.append(number(entry, "rtt", where, minimum=0))
            if "ttl" in entry:
                ttls.append(integer(entry, "ttl", where))
        elif "x" not in entry:
            raise ParseError(where, "neither a reply (rtt), a lost packet (x) nor an error")
    if not ttls and rtts and "ttl" in payload:
        ttls.append(integer(payload, "ttl", ""))
    return rtts, ttls, errors


def _count(payload: dict, key: str, *, required: bool = True) -> int | None:
    """A count that early firmware wrote as a string of digits."""
    value = payload.get(key)
    if value.__class__ is str and value.isdigit():
        return int(value)
    return integer(payload, key, "", required=required)


def _amount(payload: dict, key: str) -> float | None:
    """A summary delay in ms (a string of a number in early firmware); ``-1`` or absent: None."""
    value = payload.get(key)
    if value.__class__ is str:
        value = text_number(value, key)
    elif value is not None:
        value = number(payload, key, "")
    return None if value is None or value == -1 else value


def _firmware(payload: dict) -> str | None:
    firmware = payload.get("fw")
    return str(check(firmware, (int, str), "fw")) if firmware is not None else None


def _address_family(payload: dict) -> int | None:
    family = integer(payload, "af", "", required=False)
    return family if family in (4, 6) else None


FORMAT = Format(
    name="atlas",
    payload="json",
    summary="RIPE Atlas traceroute and ping results (API JSON, one object or an array)",
    looks_like=looks_like,
    parse=parse,
    example="atlas.jsonl",
)
