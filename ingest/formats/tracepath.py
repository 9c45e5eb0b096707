"""iputils ``tracepath`` text output (``-n``, names, ``-b`` both, IPv4 and IPv6).

Field map (tracepath text → trace record)::

     1?: [LOCALHOST]                      pmtu 9000      → the local MTU: not a hop
     1:  10.77.1.1                          0.061ms      → hop 1 (tracepath prints it twice)
     2:  r2a.lab (10.77.2.2)                0.017ms      → ``-b``: hostname and ip
     3:  10.77.2.2                          0.014ms pmtu 1500
                                                          → hop 3's ``mtu``: the frag-needed answer
                                                            of the router before the narrow link
     3:  10.77.4.2                          0.018ms asymm  4
     4:  no reply                                         → a hop with ``ip`` null
     4:  10.77.6.2                          0.018ms reached
                                                          → reached, destination_ip
     3:  10.77.4.2                          0.095ms !H   → the hop's ``error`` (``!H !N !A !P``)
         Resume: pmtu 1500 hops 4 back 4                  → pmtu_bytes (also ``Too many hops: pmtu N``)

All lines of one TTL make one hop: the first address that answered is ``ip``, later ones
``other_ips``, ``rtt_ms`` the median of ``ip``'s times. A ``pmtu N`` line's address is the
router *before* the hop (it refused the probe, too big for its next link), so it is no answer of
this TTL's: when no other line answered (``no reply`` after the retry) the hop is silent, ``ip``
null with its ``mtu`` (taken as the hop's own, the route would seem to change whenever the
narrow link's router skips an answer). Without ``-n`` tracepath prints only a name: it is then
both ``ip`` and ``hostname`` (the address is not in the output). tracepath names neither end: the source is the
envelope's, the destination the envelope's or else the host that answered ``reached``.
Probes are UDP; the text carries no time (``collected_at`` is the test time). ``tracepath:
NAME: <resolver error>`` and ``N:  send failed`` are runs that failed (``succeeded`` false).
"""

from __future__ import annotations

import re
from typing import Any

from ..build import ip_version, trace_record
from ..context import Context
from ..errors import ParseError, quote_line
from ..fields import text_number
from ..registry import Format
from ._stats import median

_LINE = re.compile(
    r"""^(?P<ttl>\d+)\??:\s+(?:
        (?P<local>\[LOCALHOST\])
      | (?P<silent>no\ reply|send\ failed|reply\ received\ 8\))
      | (?P<host>[^\s()]+)(?:\ \((?P<ip>[^\s()]+)\))?
    )
    (?:\s+(?P<rtt>\d+\.\d+)ms)?
    (?:\s+\(This\ broken\ router\ returned\ corrupted\ payload\))?
    (?:\s+(?:pmtu\ (?P<pmtu>\d+)|(?P<reached>reached)|asymm\s+\d+|(?P<flag>![A-Z])))?$""",
    re.X,
)
_SUMMARY = re.compile(r"^(?:Too many hops|Resume): pmtu (?P<pmtu>\d+)(?: hops \d+)?(?: back \d+)?$")
_FIRST = re.compile(r"^\s*\d+\??: ")
_RESOLVER = re.compile(r"^tracepath6?: (?P<name>[^\s:]+): (?P<reason>.+)$")


def looks_like(payload: str) -> bool:
    """The first line is a ``N:``/``N?:`` hop line, or a ``tracepath:`` diagnostic."""
    first = payload.lstrip("\n").split("\n", 1)[0]
    return bool(_FIRST.match(first)) or first.startswith(("tracepath: ", "tracepath6: "))


def _answer(line: re.Match, field: str) -> dict[str, Any]:
    """Who answered on one line: ip (or the printed name), hostname, rtt, and what it said."""
    host, ip, rtt, pmtu, flag, reached = line.group("host", "ip", "rtt", "pmtu", "flag", "reached")
    if ip is not None and ip_version(ip) is None:
        raise ParseError(field, f"{ip!r} is not an IP address")
    if ip is None and ip_version(host):
        host, ip = None, host
    return {
        "ip": ip or (host if host != "???" else None),
        "hostname": host if host != "???" else None,
        "rtt": text_number(rtt, field) if rtt else None,
        "pmtu": text_number(pmtu, field, int) if pmtu else None,
        "flag": flag,
        "reached": bool(reached),
    }


def _hop(ttl: int, answers: list[dict[str, Any]]) -> dict[str, Any]:
    """One hop from every line of one TTL."""
    hop: dict[str, Any] = {"ttl": ttl, "ip": None}
    pmtus = [a["pmtu"] for a in answers if a["pmtu"]]
    if pmtus:
        hop["mtu"] = pmtus[-1]
    flags = [a["flag"] for a in answers if a["flag"]]
    if flags:
        hop["error"] = flags[0]
    responders = [a for a in answers if a["ip"] and not a["pmtu"]]
    if responders:
        first = responders[0]["ip"]
        rtts = [a["rtt"] for a in responders if a["ip"] == first and a["rtt"] is not None]
        others = list(dict.fromkeys(a["ip"] for a in responders if a["ip"] != first))
        rtt = round(median(rtts), 6) if rtts else None
        hop.update(ip=first, hostname=responders[0]["hostname"], rtt_ms=rtt, other_ips=others)
    return hop


def parse(payload: str, ctx: Context) -> list:
    """One trace record for one tracepath run."""
    lines = [(number, line) for number, raw in enumerate(payload.splitlines(), start=1) if (line := raw.strip())]
    if not lines:
        raise ParseError("payload", "empty tracepath output")
    fields: dict[str, Any] = {"source": ctx.source, "time": ctx.collected_at, "tool": "tracepath", "protocol": "udp"}
    if resolver := _RESOLVER.match(lines[0][1]):
        fields.update(destination=ctx.endpoint(ctx.destination, resolver["name"]), succeeded=False,
                      error=lines[0][1], reached=False)  # fmt: skip
        return [trace_record(ctx, fields, [])]
    by_ttl: dict[int, list[dict[str, Any]]] = {}
    for number, line in lines:
        field = f"line {number}"
        if summary := _SUMMARY.match(line):
            fields["pmtu_bytes"] = text_number(summary["pmtu"], field, int)
            continue
        match = _LINE.match(line)
        if match is None:
            raise ParseError(field, f"not a tracepath line: {quote_line(line)}")
        ttl = text_number(match["ttl"], field, int)
        if match["silent"] == "send failed":
            fields.update(succeeded=False, error=f"send failed at hop {ttl}")
        elif match["local"] is None:
            by_ttl.setdefault(ttl, [])
            if match["host"] is not None:
                by_ttl[ttl].append(_answer(match, field))
    if not by_ttl and fields.get("succeeded") is not False:
        raise ParseError("payload", "no hop lines (truncated output?)")
    hops = [_hop(ttl, by_ttl[ttl]) for ttl in sorted(by_ttl)]
    end = next((a for ttl in sorted(by_ttl) for a in by_ttl[ttl] if a["reached"]), None)
    fields["reached"] = end is not None
    if end is not None:
        fields["destination_ip"] = end["ip"] if ip_version(end["ip"]) else None
        fields["destination"] = ctx.endpoint(ctx.destination, end["hostname"] or end["ip"])
    else:
        fields["destination"] = ctx.destination
    fields["ip_version"] = ip_version(*(hop["ip"] for hop in hops))
    return [trace_record(ctx, fields, hops)]


FORMAT = Format(
    name="tracepath",
    payload="text",
    summary="iputils tracepath text (pmtu, asymm, no reply, reached; -n, names, -b; IPv6)",
    looks_like=looks_like,
    parse=parse,
    example="tracepath.jsonl",
)
