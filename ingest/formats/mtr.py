"""``mtr --json`` output (mtr 0.93-0.95, and 0.92's all-strings variant).

Field map (mtr JSON → trace record)::

    report.mtr.src              → source (envelope wins): the local host name mtr printed
    report.mtr.dst              → destination (envelope wins); destination_ip when it is an address
    report.hubs[].count         → hop ttl (0.92 writes it as a string: "1")
    report.hubs[].host          → hop ip; "???" is a hop that never answered (ip null);
                                  "name (ip)" (``-b``) gives hostname and ip; a bare name
                                  (mtr without ``-n``) is both ip and hostname
    report.hubs[].Avg           → rtt_ms (mtr keeps no per-probe RTTs, so its mean stands in
                                  for the median; null when Loss% is 100)
    report.hubs[].ASN           → asn ("AS64501"; "AS???" when the lookup failed: null)

mtr's JSON carries no time (``collected_at`` is the test time), no tool version and not the
probe protocol. Hubs sharing a count are merged (the first host is ``ip``). ``reached`` is
true when the last hop is the destination (same address, or the same name); false when the
destination is an address that did not answer last, or the last hop is silent; null when the
destination is a name and the last hop an unrelated name or address (it cannot be told).
"""

from __future__ import annotations

import re
from typing import Any

from ..build import ip_version, same_address, trace_record
from ..context import Context
from ..errors import ParseError
from ..fields import join, need, number, obj, opt, plain_amount, text_number, whole_number
from ..registry import Format

_NAME_AND_IP = re.compile(r"^(?P<name>[^\s()]+) \((?P<ip>[^\s()]+)\)$")
_ASN = re.compile(r"^(?:AS)?(?P<number>\d+)$")


def looks_like(payload: dict) -> bool:
    """mtr wraps everything in ``{"report": {"mtr": {...}, "hubs": [...]}}``."""
    report = payload.get("report")
    return isinstance(report, dict) and isinstance(report.get("mtr"), dict)


def _count(hub: dict, where: str) -> int:
    """The hop number: an integer, or a string of one in mtr 0.92."""
    value = need(hub, "count", (int, str), where)
    count = text_number(value, join(where, "count"), int) if isinstance(value, str) else value
    if not 1 <= count <= 255:
        raise ParseError(join(where, "count"), f"must be a hop number 1-255, got {count}")
    return count


def _host(hub: dict, where: str) -> tuple[str | None, str | None]:
    """(ip, hostname) of a hub's ``host``."""
    host = need(hub, "host", str, where).strip()
    if not host:
        raise ParseError(join(where, "host"), "empty")
    if host == "???":
        return None, None
    if both := _NAME_AND_IP.match(host):
        if ip_version(both["ip"]) is None:
            raise ParseError(join(where, "host"), f"{both['ip']!r} is not an IP address")
        return both["ip"], both["name"]
    return (host, None) if ip_version(host) else (host, host)


def _asn(hub: dict, where: str) -> int | None:
    text = opt(hub, "ASN", str, where)
    number_match = _ASN.match(text) if text else None
    return whole_number(number_match["number"], join(where, "ASN")) if number_match else None


def _hops(hubs: list) -> list[dict[str, Any]]:
    by_count: dict[int, dict[str, Any]] = {}
    for index, hub in enumerate(hubs):
        where = f"report.hubs[{index}]"
        hub = obj(hub, where)
        count = hub.get("count")
        if not (count.__class__ is int and 1 <= count <= 255):  # else the hop number as it is
            count = _count(hub, where)
        ip, hostname = _host(hub, where)
        loss, average = hub.get("Loss%"), hub.get("Avg")
        if not ((loss is None or plain_amount(loss)) and (average is None or plain_amount(average))):
            loss = number(hub, "Loss%", where, required=False, minimum=0)
            average = number(hub, "Avg", where, required=False, minimum=0)
        hop = by_count.setdefault(count, {"ttl": count, "ip": None, "other_ips": []})
        if ip is None:
            continue
        if hop["ip"] is None:
            hop.update(ip=ip, hostname=hostname, asn=_asn(hub, where))
            hop["rtt_ms"] = average if average is not None and (loss is None or loss < 100) else None
        elif ip != hop["ip"] and ip not in hop["other_ips"]:
            hop["other_ips"].append(ip)
    return [by_count[count] for count in sorted(by_count)]


def _reached(last: dict[str, Any], dst: str) -> bool | None:
    if last["ip"] is None:
        return False
    if ip_version(dst):
        return any(same_address(ip, dst) for ip in [last["ip"], *last["other_ips"]])
    return True if dst in (last["ip"], last.get("hostname")) else None


def parse(payload: dict, ctx: Context) -> list:
    """One trace record for one mtr report."""
    report = need(payload, "report", dict, "")
    header = need(report, "mtr", dict, "report")
    dst = need(header, "dst", str, "report.mtr")
    src = opt(header, "src", str, "report.mtr")
    hops = _hops(need(report, "hubs", list, "report"))
    if not hops:
        raise ParseError("report.hubs", "empty: the report has no hops")
    reached = _reached(hops[-1], dst)
    destination_ip = dst if ip_version(dst) else None
    if reached and destination_ip is None and ip_version(hops[-1]["ip"]):
        destination_ip = hops[-1]["ip"]
    fields: dict[str, Any] = {
        "source": ctx.endpoint(ctx.source, src or None),
        "destination": ctx.endpoint(ctx.destination, dst),
        "destination_ip": destination_ip,
        "time": ctx.collected_at,
        "tool": "mtr",
        "reached": reached,
        "ip_version": ip_version(destination_ip, *(hop["ip"] for hop in hops)),
    }
    return [trace_record(ctx, fields, hops)]


FORMAT = Format(
    name="mtr",
    payload="json",
    summary="mtr --json reports (0.92-0.95; ??? hops, -b names and addresses, -z AS numbers)",
    looks_like=looks_like,
    parse=parse,
    example="mtr.jsonl",
)
