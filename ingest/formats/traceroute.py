"""Linux ``traceroute`` text output (Butskoy's traceroute 2.x, also as ``traceroute6``/``-6``).

Field map (traceroute text → trace record)::

    traceroute to NAME (IP), 30 hops max, 60 byte packets
                                    → destination (envelope wins), destination_ip
    traceroute6 to NAME (IP) from SRC, ...      → source_ip (BSD/legacy traceroute6 header)
     3  name (ip) [AS64503]  0.123 ms !H  ip2  0.2 ms  *
                                    → one hop per line, ttl 3: the first address that answered
                                      is ``ip`` (``hostname`` from ``name (ip)``, ``asn`` from
                                      ``-A``'s ``[ASn]``), later ones ``other_ips``; ``rtt_ms`` is
                                      the median of ``ip``'s RTTs; the first ``!`` flag (``!H !N
                                      !P !S !X !V !C !F-mtu !<n>``) is ``error``
     5  * * *                       → a hop with ``ip`` null
    F=1500 (``--mtu``) or !F-1500   → the hop's ``mtu``

``[*]`` (no AS found) and ``[!!]`` (lookup failed) give no ``asn``; ``<MPLS:...>`` (``-e``) and
``'-N'`` (``--back``) are read and dropped. The text carries no time (``collected_at`` is the
test time), no source host (the envelope's) and not the probe protocol (UDP by default, ``-I``
ICMP, ``-T`` TCP), so ``protocol`` stays null. ``reached`` is true when the last hop's
answers include the destination address. A run that failed before probing is a record with
``succeeded`` false: the header followed by ``connect: Network is unreachable``-style
diagnostics, or a bad destination (``NAME: Name or service not known`` + ``Cannot handle
"host" cmdline arg `NAME' ...``).
"""

from __future__ import annotations

import re
from typing import Any

from ..build import ip_version, same_address, trace_record
from ..context import Context
from ..errors import ParseError, quote_line
from ..fields import text_number
from ..registry import Format
from ._stats import median

_HEADER = re.compile(
    r"^traceroute6? to (?P<name>\S+) \((?P<ip>[^\s()]+)\)(?: from (?P<source>[^\s,]+))?, "
    r"\d+ hops max, \d+ byte packets$"
)
_HOP = re.compile(r"^(?P<ttl>\d+) +(?P<rest>\S.*)$")
_TOKEN = re.compile(
    r"""\s*(?:
      (?P<star>\*)
    | (?P<rtt>\d+(?:\.\d+)?)\ ms(?=\s|$)
    | (?P<flag>!(?:[A-Z]|F-\d+|<\d+(?:-\d+)?>))(?=\s|$)
    | F=(?P<mtu>\d+)(?=\s|$)
    | \[(?P<asn>[^\]\s]*)\]
    | <(?P<extension>[^>]*)>
    | '-(?P<back>\d+)'
    | (?P<name>[^\s()\[\]<>!*']+)\ \((?P<ip>[^\s()]+)\)
    | (?P<addr>[^\s()\[\]<>!*']+)
    )""",
    re.X,
)
_AS_NUMBER = re.compile(r"^AS(\d+)")
_DIAGNOSTIC = re.compile(r"^(?:connect|send|sendto|sendmsg|recv|recvmsg|bind|socket|setsockopt|poll)(?: [\w-]+)?: \S")
_BAD_DESTINATION = re.compile(r"^Cannot handle \"host\" cmdline arg `(?P<name>[^']*)' on position \d+")
_RESOLVER = re.compile(r"^(?P<name>[^\s:]+): (?P<reason>[A-Z][^:]*)$")


def looks_like(payload: str) -> bool:
    """Starts with traceroute's ``traceroute to NAME (IP), ...`` header or its bad-host complaint."""
    start = payload.lstrip()
    return start.startswith(("traceroute to ", "traceroute6 to ")) or "Cannot handle \"host\" cmdline arg" in payload


def _address(text: str, field: str, line: str) -> str:
    if ip_version(text) is None:
        raise ParseError(field, f"{text!r} is not an IP address in {quote_line(line)}")
    return text


def _hop(ttl: int, rest: str, field: str, line: str) -> dict[str, Any]:
    """One hop from the probes printed on one line (any line traceroute prints), token by token."""
    hop: dict[str, Any] = {"ttl": ttl, "ip": None}
    answers: dict[str, dict[str, Any]] = {}  # address → hostname, asn, rtts; in order of answer
    current: str | None = None
    position = 0
    while position < len(rest):
        token = _TOKEN.match(rest, position)
        if token is None or token.end() == position:
            raise ParseError(field, f"cannot read {rest[position:].strip()[:30]!r} in {quote_line(line)}")
        position = token.end()
        kind = token.lastgroup
        if kind in ("ip", "addr"):
            current = _address(token["ip"] or token["addr"], field, line)
            name = token["name"]
            answers.setdefault(current, {"hostname": name if name and name != current else None, "rtts": []})
        elif kind in ("rtt", "flag", "asn") and current is None:
            raise ParseError(field, f"{token.group().strip()!r} before any address in {quote_line(line)}")
        elif kind == "rtt":
            answers[current]["rtts"].append(text_number(token["rtt"], field))
        elif kind == "flag":
            hop.setdefault("error", token["flag"])
            if token["flag"].startswith("!F-"):
                hop.setdefault("mtu", text_number(token["flag"][3:], field, int))
        elif kind == "asn":
            number = _AS_NUMBER.match(token["asn"])
            answers[current].setdefault("asn", text_number(number.group(1), field, int) if number else None)
        elif kind == "mtu":
            hop["mtu"] = text_number(token["mtu"], field, int)
    if answers:
        first, *others = answers
        rtts = answers[first]["rtts"]
        hop.update(
            ip=first,
            hostname=answers[first]["hostname"],
            asn=answers[first].get("asn"),
            rtt_ms=round(median(rtts), 6) if rtts else None,
            other_ips=others,
        )
    return hop


def _diagnostics(lines: list[tuple[int, str]]) -> list[str] | None:
    """The lines of a run that failed before probing, or None when ``lines`` are not all diagnostics."""
    texts = [line for _, line in lines]
    if texts and all(_DIAGNOSTIC.match(t) or _RESOLVER.match(t) or _BAD_DESTINATION.match(t) for t in texts):
        return texts
    return None


def parse(payload: str, ctx: Context) -> list:
    """One trace record for one traceroute run."""
    lines = [(number, line) for number, raw in enumerate(payload.splitlines(), start=1) if (line := raw.strip())]
    if not lines:
        raise ParseError("payload", "empty traceroute output")
    fields: dict[str, Any] = {"source": ctx.source, "time": ctx.collected_at, "tool": "traceroute"}
    header = _HEADER.match(lines[0][1])
    if header is None:
        diagnostics = _diagnostics(lines)
        bad = next((match for _, line in lines if (match := _BAD_DESTINATION.match(line))), None)
        if diagnostics is None or bad is None:
            raise ParseError("line 1", f"not a traceroute header: {quote_line(lines[0][1])}")
        fields.update(destination=ctx.endpoint(ctx.destination, bad["name"]), succeeded=False,
                      error="; ".join(diagnostics), reached=False)  # fmt: skip
        return [trace_record(ctx, fields, [])]
    fields.update(
        destination=ctx.endpoint(ctx.destination, header["name"]),
        source_ip=header["source"],
        destination_ip=_address(header["ip"], "line 1", lines[0][1]),
    )
    body = lines[1:]
    if not body:
        raise ParseError("payload", "no hop lines after the header (truncated output?)")
    if (diagnostics := _diagnostics(body)) is not None:
        fields.update(succeeded=False, error="; ".join(diagnostics), reached=False)
        return [trace_record(ctx, fields, [])]
    hops: list[dict[str, Any]] = []
    for number, line in body:
        field = f"line {number}"
        match = _HOP.match(line)
        if match is None:
            raise ParseError(field, f"not a traceroute hop line: {quote_line(line)}")
        ttl = text_number(match["ttl"], field, int)
        if hops and ttl <= hops[-1]["ttl"]:
            raise ParseError(field, f"hop {ttl} after hop {hops[-1]['ttl']}: {quote_line(line)}")
        hops.append(_hop(ttl, match["rest"], field, line))
    last = hops[-1]
    answered_last = [last["ip"], *last.get("other_ips", [])]
    fields["reached"] = any(same_address(ip, fields["destination_ip"]) for ip in answered_last)
    return [trace_record(ctx, fields, hops)]


FORMAT = Format(
    name="traceroute",
    payload="text",
    summary="Linux traceroute text (-n or names, several addresses per hop, -A AS numbers, !H flags, IPv6)",
    looks_like=looks_like,
    parse=parse,
    example="traceroute.jsonl",
)
