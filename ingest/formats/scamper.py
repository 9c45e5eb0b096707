"""scamper JSON (``scamper -O json``, ``sc_warts2json``): one object a line, traces become records.

Field map (scamper ``"type": "trace"`` object → trace record)::

    src, dst                    → source_ip / destination_ip, and source / destination (envelope wins)
    start.sec + start.usec      → time
    method                      → protocol: udp(-paris) → udp, icmp(-echo)(-paris) → icmp, tcp(-ack) → tcp
    stop_reason                 → reached (``COMPLETED``); ``ERROR`` is a failed run (succeeded false)
    hops[]                      → one hop per ``probe_ttl``: the first ``addr`` is ``ip`` (later
                                  ones ``other_ips``), ``rtt_ms`` the median of its ``rtt``s,
                                  ``name`` (``-O ptr``) the hostname; TTLs from ``firsthop`` to
                                  ``hop_count`` that no reply names are hops with ``ip`` null
    icmp_type / icmp_code       → ``error`` as traceroute flags (``!N !H !P !S !X !V !C !F-mtu
                                  !<code>``) for destination unreachable (ICMP 3, ICMPv6 1) and
                                  packet too big (ICMPv6 2); port unreachable is the destination
                                  answering, no error
    icmp_nhmtu (frag-needed)    → the hop's ``mtu``; pmtu_bytes is the smallest one reported
    pmtud.path_mtu, notes[]     → (``trace -M``, scamper >= 2023) pmtu_bytes, and each note's
                                  ``nhmtu`` as the ``mtu`` of hop ``dist``

Quirks of real scamper (20211212) output: the next-hop MTU key is written ``"icmp_nhmtu:"``
(with the colon); a reply the kernel timestamped before its probe prints as a wrapped
2^32 µs (``4294967.2xx`` ms) and is dropped as no RTT; a trace where nothing answered has no
``hops`` key at all. A frag-needed reply comes from the router *before* the narrow link, so
its address is no answer of that TTL's: with no other reply there the hop is silent (``ip``
null, with its ``mtu`` and ``!F`` error). ``cycle-start``,
``cycle-stop``, ``cycle-def`` and ``list`` objects are bookkeeping and yield no record; any
other object type (``ping``, ``tracelb``, ...) is rejected naming it.
"""

from __future__ import annotations

from typing import Any

from ..build import ip_version, trace_record
from ..context import Context
from ..errors import ParseError
from ..fields import epoch_time, integer, need, number, obj, opt, plain_amount, plain_count
from ..registry import Format
from ._stats import median

_METADATA = frozenset({"cycle-start", "cycle-stop", "cycle-def", "list"})
_MEASUREMENTS = frozenset(
    {"ping", "tracelb", "dealias", "neighbourdisc", "tbit", "sting", "sniff", "host", "http", "udpprobe"}
)
_PROTOCOLS = {"udp": "udp", "icmp": "icmp", "tcp": "tcp"}
_WRAPPED_MS = 4_294_000.0  # a negative RTT printed as an unsigned 2^32 µs is ~4294967 ms
_UNREACHABLE = {4: 3, 6: 1}  # destination-unreachable ICMP type per IP version
_PORT_UNREACHABLE = {4: 3, 6: 4}
_FLAGS_V4 = {0: "!N", 6: "!N", 8: "!N", 11: "!N", 1: "!H", 7: "!H", 12: "!H", 9: "!X", 10: "!X", 13: "!X",
             2: "!P", 5: "!S", 14: "!V", 15: "!C"}  # fmt: skip
_FLAGS_V6 = {0: "!N", 1: "!X", 2: "!H", 3: "!H"}


def looks_like(payload: dict) -> bool:
    """A scamper trace (``stop_reason``), cycle record (``list_name``) or other scamper object (``userid``)."""
    kind = payload.get("type")
    if not isinstance(kind, str):
        return False
    if kind == "trace":
        return "stop_reason" in payload and "hop_count" in payload
    if kind in _METADATA:
        return "list_name" in payload or "monitor" in payload
    return kind in _MEASUREMENTS and "userid" in payload


def _reply(entry: Any, where: str) -> dict[str, Any]:
    """One reply: address, ttl, rtt and what its ICMP type/code says.

    A plain value (scamper's own: a string, a count, a finite amount) is taken as it is; any other
    goes to the field helpers, which convert it or raise the ParseError naming it, in field order.
    """
    if entry.__class__ is not dict:
        entry = obj(entry, where)
    get = entry.get
    address = get("addr")
    if address.__class__ is not str:
        address = need(entry, "addr", str, where)
    version = ip_version(address)
    if version is None:
        raise ParseError(f"{where}.addr", f"{address!r} is not an IP address")
    ttl = get("probe_ttl")
    if not (ttl.__class__ is int and 1 <= ttl <= 255):
        ttl = integer(entry, "probe_ttl", where, minimum=1)
        if ttl > 255:
            raise ParseError(f"{where}.probe_ttl", f"must be <= 255, got {ttl}")
    rtt = get("rtt")
    if not (rtt is None or plain_amount(rtt)):
        rtt = number(entry, "rtt", where, required=False, minimum=0)
    icmp_type = get("icmp_type")
    if not (icmp_type is None or plain_count(icmp_type)):
        icmp_type = integer(entry, "icmp_type", where, required=False)
    icmp_code = get("icmp_code")
    if not (plain_count(icmp_code) or (icmp_code is None and icmp_type is None)):
        icmp_code = integer(entry, "icmp_code", where, required=icmp_type is not None)
    nhmtu = get("icmp_nhmtu")
    if not (nhmtu is None or plain_count(nhmtu)):
        nhmtu = integer(entry, "icmp_nhmtu", where, required=False)
    if not nhmtu:
        nhmtu = get("icmp_nhmtu:")  # the key as real scamper writes it
        if not (nhmtu is None or plain_count(nhmtu)):
            nhmtu = integer(entry, "icmp_nhmtu:", where, required=False)
    name = get("name")
    if not (name is None or name.__class__ is str):
        name = opt(entry, "name", str, where)
    return _reply_fields(address, version, ttl, rtt, icmp_type, icmp_code, nhmtu, name)


def _reply_fields(address: str, version: int, ttl: int, rtt: float | None, icmp_type: int | None,
                  icmp_code: int | None, nhmtu: int | None, name: str | None) -> dict[str, Any]:  # fmt: skip
    error = None
    if icmp_type == _UNREACHABLE[version] and icmp_code != _PORT_UNREACHABLE[version]:
        flags = _FLAGS_V4 if version == 4 else _FLAGS_V6
        error = f"!F-{nhmtu or 0}" if version == 4 and icmp_code == 4 else flags.get(icmp_code, f"!<{icmp_code}>")
    elif version == 6 and icmp_type == 2:
        error = f"!F-{nhmtu or 0}"
    return {
        "ip": address,
        "ttl": ttl,
        "hostname": name,
        "rtt": rtt if rtt is not None and rtt < _WRAPPED_MS else None,
        "error": error,
        "mtu": nhmtu,
        "too_big": error is not None and error.startswith("!F-"),
    }


def _hop(ttl: int, replies: list[dict[str, Any]]) -> dict[str, Any]:
    """One hop from every reply to probes of one TTL."""
    hop: dict[str, Any] = {"ttl": ttl, "ip": None}
    errors = [r["error"] for r in replies if r["error"]]
    if errors:
        hop["error"] = errors[0]
    mtus = [r["mtu"] for r in replies if r["mtu"]]
    if mtus:
        hop["mtu"] = min(mtus)
    answering = [r for r in replies if not r["too_big"]]
    addresses = list(dict.fromkeys(r["ip"] for r in answering))
    if addresses:
        first = [r for r in answering if r["ip"] == addresses[0]]
        rtts = [r["rtt"] for r in first if r["rtt"] is not None]
        hop.update(ip=addresses[0], hostname=first[0]["hostname"], other_ips=addresses[1:],
                   rtt_ms=round(median(rtts), 6) if rtts else None)  # fmt: skip
    return hop


def _hops(payload: dict) -> list[dict[str, Any]]:
    replies = [_reply(entry, f"hops[{i}]") for i, entry in enumerate(opt(payload, "hops", list, "", []))]
    first = integer(payload, "firsthop", "", required=False, minimum=1) or 1
    last = integer(payload, "hop_count", "", minimum=0)
    if last > 255 or first > 255:
        raise ParseError("hop_count" if last > 255 else "firsthop", "must be <= 255")
    by_ttl: dict[int, list[dict[str, Any]]] = {ttl: [] for ttl in range(first, last + 1)}
    for reply in replies:
        by_ttl.setdefault(reply["ttl"], []).append(reply)
    return [_hop(ttl, by_ttl[ttl]) for ttl in sorted(by_ttl)]


def _pmtu(payload: dict, hops: list[dict[str, Any]]) -> int | None:
    """The path MTU; ``pmtud.notes[].dist`` also puts each MTU drop on its hop."""
    pmtud = opt(payload, "pmtud", dict, "")
    if pmtud is None or pmtud.get("path_mtu") is None:
        return min((hop["mtu"] for hop in hops if hop.get("mtu")), default=None)
    by_ttl = {hop["ttl"]: hop for hop in hops}
    for index, note in enumerate(opt(pmtud, "notes", list, "pmtud", [])):
        where = f"pmtud.notes[{index}]"
        dist = integer(obj(note, where), "dist", where, required=False)
        if dist in by_ttl:
            by_ttl[dist].setdefault("mtu", integer(note, "nhmtu", where, minimum=1))
    return integer(pmtud, "path_mtu", "pmtud", minimum=1)


def parse(payload: dict, ctx: Context) -> list:
    """One trace record per scamper trace object; no record for cycle and list bookkeeping."""
    kind = need(payload, "type", str, "")
    if kind in _METADATA:
        return []
    if kind != "trace":
        raise ParseError("type", f"scamper {kind!r} objects are not traces; only type 'trace' is read")
    src = opt(payload, "src", str, "")
    dst = need(payload, "dst", str, "")
    start = need(payload, "start", dict, "")
    microseconds = integer(start, "usec", "start", required=False) or 0
    method = need(payload, "method", str, "")
    stop_reason = need(payload, "stop_reason", str, "")
    hops = _hops(payload)
    fields: dict[str, Any] = {
        "source": ctx.endpoint(ctx.source, src),
        "destination": ctx.endpoint(ctx.destination, dst),
        "source_ip": src,
        "destination_ip": dst,
        "time": epoch_time(start, "sec", "start", fraction=microseconds / 1e6),
        "tool": "scamper",
        "protocol": _PROTOCOLS.get(method.split("-")[0]),
        "reached": stop_reason == "COMPLETED",
        "pmtu_bytes": _pmtu(payload, hops),
    }
    if stop_reason == "ERROR":
        fields.update(succeeded=False, error=f"scamper stopped with ERROR (stop_data {payload.get('stop_data')})")
    return [trace_record(ctx, fields, hops)]


FORMAT = Format(
    name="scamper",
    payload="json",
    summary="scamper / sc_warts2json trace objects (cycle and list records yield nothing)",
    looks_like=looks_like,
    parse=parse,
    example="scamper.jsonl",
)
