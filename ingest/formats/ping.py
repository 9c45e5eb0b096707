"""ping text output: Linux iputils ``ping`` / ``ping -6`` / ``ping6`` and BSD/macOS ``ping``.

Field map (ping text → record, round-trip, times in ms)::

    PING name (ip) 56(84) bytes of data.        → destination (envelope wins), destination_ip
    PING name(canonical (ip)) 56 data bytes     → the same, IPv6 form; "from SRC IFACE:" → source_ip
    [1700000000.123456] 64 bytes from ...       → time: the first -D timestamp, else collected_at
    64 bytes from ip: icmp_seq=1 ttl=64 time=0.035 ms
                                                → delay_min/median/mean/p95/max_ms and jitter_ms
                                                  (p95 - median) via _stats.delay_stats; ttl_min/max
    N packets transmitted, M received, +D duplicates, +E errors, P% packet loss
                                                → packets_sent, packets_received, packets_lost
                                                  (N - M), loss_ratio, duplicates
    rtt min/avg/max/mdev = a/b/c/d ms           → delay_min/mean/max_ms and jitter_ms = mdev, used
    round-trip min/avg/max/stddev = a/b/c/d ms    only when there are no reply lines (ping -q)

Every reply line counts, ``(DUP!)`` ones included, as ping's own rtt summary counts them (it
also does not mark duplicates of a broadcast ping without -v). ``From ... Destination Host
Unreachable``, ``no answer yet`` and ``Request timeout`` lines are reports of lost probes,
counted by the statistics line. ``ping:`` (or ``/usr/bin/ping:``: ping names itself as it was
invoked), ``WARNING:`` and ``ai->`` lines are diagnostics.
Output with diagnostics but no statistics (``ping: unknown host x``, ``ping: connect: Network
is unreachable``) is a failed measurement: ``succeeded`` false, ``error`` the diagnostics,
packet counts null, the destination from a name-resolution error when it names one. The
source is the envelope's: ping's output does not name the sending host.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from typing import Any

from pathwatch.contract import timefmt

from ..build import record
from ..context import Context
from ..errors import ParseError, quote_line
from ..fields import text_number, whole_number
from ..registry import Format
from ._stats import delay_stats

_STATISTICS_MARK = " ping statistics ---"
_STAMP = re.compile(r"^\[(\d+)(?:\.(\d{1,9}))?\] (.*)$")
_HEADER = re.compile(
    r"^PING (?P<name>[^\s(]+) ?\((?:[^\s()]+ \()?(?P<ip>[^\s()]+)\)\)?(?: from (?P<source>\S+)[^:]*)?:? "
    r"\d+(?:\(\d+\))? (?:data )?bytes(?: of data\.)?$"
)
_REPLY = re.compile(
    r"^\d+ bytes from .+?[:,] icmp_seq=\d+(?: ident=\d+)? (?:ttl|hlim)=(?P<ttl>\d+)"
    r"(?: time=(?P<time>\d+(?:\.\d+)?) ?ms)?(?: \([^)]*\))*$"
)
_LOST_PROBE = re.compile(
    r"^(?:From \S.* icmp_seq=\d+ \S.*|no answer yet for icmp_seq=\d+|Request timeout for icmp_seq \d+)$"
)
_TRAILER = re.compile(r"^--- \S+ ping statistics ---$")
_RTT = re.compile(
    r"^(?:rtt|round-trip) min/avg/max(?:/(?:mdev|stddev|std-dev))? = "
    r"(\d+(?:\.\d+)?)/(\d+(?:\.\d+)?)/(\d+(?:\.\d+)?)(?:/(\d+(?:\.\d+)?))? ms(?:, .*)?$"
)
# iputils names itself as it was invoked: ``ping: ...``, or ``/usr/bin/ping: ...`` when run by its path.
_PROGRAM = r"(?:[^\s:]*/)?ping6?: "
_DIAGNOSTIC = re.compile(rf"^(?:{_PROGRAM}|WARNING: |ai->ai_)")
_PIPE = re.compile(r"^pipe \d+$")
_COUNT_PARTS = {
    "sent": re.compile(r"^(\d+) packets transmitted$"),
    "received": re.compile(r"^(\d+) (?:packets )?received$"),
    "duplicates": re.compile(r"^\+(\d+) duplicates$"),
    "errors": re.compile(r"^\+(\d+) (?:errors|corrupted)$"),
    "loss": re.compile(r"^(\d+(?:\.\d+)?)% packet loss$"),
    "elapsed": re.compile(r"^time \d+(?:\.\d+)?ms$"),
    "late": re.compile(r"^\d+ packets out of wait time$"),
}
_RESOLVER = re.compile(
    rf"^{_PROGRAM}(?:unknown host (?P<old>\S+)|(?P<name>[^\s:]+): (?:Name or service not known|"
    r"Temporary failure in name resolution|No address associated with hostname|"
    r"Address family for hostname not supported|Non-recoverable failure in name resolution))$"
)


def looks_like(payload: str) -> bool:
    """Starts with a ``PING`` header or a ``ping:`` diagnostic, or holds ping's statistics trailer."""
    start = payload.lstrip()
    return start.startswith("PING ") or re.match(_PROGRAM, start) is not None or _STATISTICS_MARK in payload


def _stamp_time(seconds: str, fraction: str | None, field: str) -> str:
    """A ``-D`` timestamp (Unix seconds) as RFC 3339, exact to the microsecond.

    >>> _stamp_time("1700000000", "123456", "line 2")
    '2023-11-14T22:13:20.123456Z'
    """
    micro = int((fraction or "0").ljust(9, "0")[:6])
    try:
        moment = datetime.fromtimestamp(int(seconds), tz=timezone.utc) + timedelta(microseconds=micro)
    except (OverflowError, OSError, ValueError):
        raise ParseError(field, f"timestamp out of range: [{seconds}]") from None
    return timefmt.format_utc(moment)


def _counts(line: str, field: str) -> dict[str, int] | None:
    """The statistics line's counts, or None when ``line`` is not one."""
    if "packets transmitted" not in line:
        return None
    found: dict[str, int] = {}
    for part in line.split(", "):
        for key, pattern in _COUNT_PARTS.items():
            if match := pattern.match(part):
                found[key] = whole_number(match.group(1), field) if key in ("sent", "received", "duplicates") else 0
                break
        else:
            raise ParseError(field, f"unrecognised part {part!r} in the statistics line {quote_line(line)}")
    if "sent" not in found or "received" not in found:
        raise ParseError(field, f"statistics line without transmitted/received counts: {quote_line(line)}")
    if found["received"] > found["sent"]:
        raise ParseError(field, f"more packets received than transmitted: {quote_line(line)}")
    return found


def _scan(payload: str) -> dict[str, Any]:
    """Classify every line; raise ParseError on the first that is not ping output."""
    seen: dict[str, Any] = {"rtts": [], "ttls": [], "diagnostics": [], "time": None}
    for number, raw in enumerate(payload.splitlines(), start=1):
        line, field = raw.strip(), f"line {number}"
        if not line:
            continue
        if line[:1] == "[" and (stamp := _STAMP.match(line)):
            seen["time"] = seen["time"] or _stamp_time(stamp.group(1), stamp.group(2), field)
            line = stamp.group(3)
        if line.startswith("PING ") and (header := _HEADER.match(line)):
            if "header" in seen:
                raise ParseError(field, f"a second ping run in one payload: {quote_line(line)}")
            seen["header"] = header
        elif reply := _REPLY.match(line):
            ttl, time = reply.group("ttl", "time")
            seen["ttls"].append(text_number(ttl, field, int))
            if time is not None:
                seen["rtts"].append(text_number(time, field))
        elif (counts := _counts(line, field)) is not None:
            if "counts" in seen:
                raise ParseError(field, f"a second statistics line in one payload: {quote_line(line)}")
            seen["counts"] = counts
        elif rtt := _RTT.match(line):
            seen["rtt"] = [text_number(value, field) if value else None for value in rtt.groups()]
        elif _DIAGNOSTIC.match(line):
            seen["diagnostics"].append(line)
        elif not (_LOST_PROBE.match(line) or _TRAILER.match(line) or _PIPE.match(line)):
            raise ParseError(field, f"not ping output: {quote_line(line)}")
    return seen


def _delays(seen: dict[str, Any]) -> dict[str, Any]:
    if seen["rtts"] or "rtt" not in seen:
        return delay_stats(seen["rtts"])
    low, mean, high, deviation = seen["rtt"]
    return {"delay_min_ms": low, "delay_median_ms": None, "delay_mean_ms": mean, "delay_p95_ms": None,
            "delay_max_ms": high, "jitter_ms": deviation}  # fmt: skip


def parse(payload: str, ctx: Context) -> list:
    """One round-trip latency record per ping run; a failed run (no statistics) is a record too."""
    if not payload.strip():
        raise ParseError("payload", "empty ping output")
    seen = _scan(payload)
    header = seen.get("header")
    named = header.group("name") if header else None
    fields: dict[str, Any] = {
        "source": ctx.source,
        "source_ip": header.group("source") if header else None,
        "destination_ip": header.group("ip") if header else None,
        "time": seen["time"] or ctx.collected_at,
        "tool": "ping",
        "one_way": False,
    }
    counts = seen.get("counts")
    if counts is None:
        if not seen["diagnostics"]:
            raise ParseError("statistics line", "missing: the output ends before ping's statistics (truncated?)")
        for line in seen["diagnostics"]:
            if resolver := _RESOLVER.match(line):
                named = named or resolver.group("old") or resolver.group("name")
        fields.update(destination=ctx.endpoint(ctx.destination, named), succeeded=False)
        fields["error"] = "; ".join(dict.fromkeys(seen["diagnostics"]))
        return [record("latency", ctx, fields)]
    sent, received = counts["sent"], counts["received"]
    fields.update(
        destination=ctx.endpoint(ctx.destination, named),
        packets_sent=sent,
        packets_received=received,
        packets_lost=sent - received,
        loss_ratio=(sent - received) / sent if sent else None,
        duplicates=counts.get("duplicates", 0),
        ttl_min=min(seen["ttls"]) if seen["ttls"] else None,
        ttl_max=max(seen["ttls"]) if seen["ttls"] else None,
        **_delays(seen),
    )
    return [record("latency", ctx, fields)]


FORMAT = Format(
    name="ping",
    payload="text",
    summary="ping text (iputils ping/ping6, BSD/macOS): replies, statistics, failed runs",
    looks_like=looks_like,
    parse=parse,
    example="ping.jsonl",
)
