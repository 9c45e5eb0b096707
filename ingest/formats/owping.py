"""owping (OWAMP) text output: raw ``owping -R`` packet lines, or the human summary blocks.

**Raw** (``owping -R``, one direction, one packet a line: ``SEQ STIME SSYNC SERR RTIME RSYNC
RERR TTL``; STIME/RTIME are 64-bit NTP timestamps written as decimal integers, upper 32 bits
seconds since 1900, lower 32 bits the fraction): delay = (RTIME - STIME) / 2**32 s → the
``delay_*_ms`` statistics and ``jitter_ms`` (p95 - median) via ``_stats.delay_stats``;
negative delays (bad clocks) are kept. RTIME 0 → lost; a repeated SEQ → ``duplicates`` (not
sent again, not in the delays); a packet whose SEQ is below the previous received one →
``reordered``; max(SERR + RERR) s over received packets → ``max_clock_error_ms``; TTL of the
received packets → ``ttl_min``/``ttl_max``; earliest STIME → ``time``. Clocks count as
synchronized, as owping's own summary counts them, when every received packet has SSYNC and
RSYNC 1 and every lost one RSYNC 1 (owping writes SSYNC 0 on lost records). The raw lines
name no hosts: source/destination come from the envelope (null without one).

**Summary** (what owping prints by default, one block per direction, forward first)::

    --- owping statistics from [A]:port to [B]:port ---      → source/destination (ip if literal)
    first:  2019-02-13T11:54:19.387                          → time (read as UTC)
    10 sent, 1 lost (10.000%), 0 duplicates                  → packets_*, loss_ratio, duplicates
    one-way delay min/median/max = 1/2/3 ms, (err=0.2 ms)    → delay_min/median/max_ms,
                                                               max_clock_error_ms, clock_synchronized
    one-way jitter = 0.1 ms (P95-P50)                        → jitter_ms
    hops = 3 (consistently)                                  → ttl_min = ttl_max = 255 - 3
    1-reordering = 2.000000%                                 → reordered

``delay_p95_ms`` comes from a ``95.0:`` percentile line when owping printed one (``-a 95``),
else it is derived as median + jitter, since owping's jitter *is* P95 - P50;
``delay_mean_ms`` is null (owping does not report it). Delays in ``ns``/``us``/``s`` are
converted to ms; ``nan`` (every packet lost) becomes null; ``(unsync)`` gives
``clock_synchronized`` false and no clock error. Hops become TTLs because OWAMP senders
always send with TTL 255. ``N-reordering = P%`` is a share of the received packets
(duplicates included, as owping counts them), turned back into a count. With envelope
endpoints S → D the forward block is S → D and the reverse block D → S: a block is matched
to a direction by its host names when they tell, else by position (owping prints the
forward direction first).
"""

from __future__ import annotations

import ipaddress
import math
import re
from collections.abc import Iterable
from datetime import datetime, timedelta, timezone
from functools import lru_cache
from typing import Any

from pathwatch.contract import timefmt

from ..build import record
from ..context import Context
from ..errors import ParseError, quote_line
from ..fields import text_number, whole_number
from ..registry import Format
from ._stats import delay_stats

RAW_LINE = re.compile(r"^(\d+) (\d+) (\d) ([-.0-9e+]*) (\d+) (\d) ([-.0-9e+]*) (\d+)$")
_MARKER = "--- owping statistics from"
_WAIT = re.compile(r"^Approximately [\d.]+ seconds until results available$")
_HEADER = re.compile(r"^--- owping statistics from \[([^\]]*)\]:(\S*) to \[([^\]]*)\]:(\S*) ---$")
_SENT = re.compile(r"^(\d+) sent, (\d+) lost \([^)]*%\), (\d+) duplicates$")
_DELAY = re.compile(
    r"^one-way delay min/median/max = (\S+)/(\S+)/(\S+) ?([a-z]*), \((?:err=(\S+) ?([a-z]*)|(unsync))\)$"
)
_JITTER = re.compile(r"^one-way jitter = (\S+) ?([a-z]*) \(P95-P50\)$")
_PERCENTILE = re.compile(r"^(\d+(?:\.\d+)?): (\S+) ?([a-z]*)$")
_FIRST = re.compile(r"^first:\s+(\S+)$")
_REORDERING = re.compile(r"^(\d+)-reordering = ([\d.]+)%$")
_HOPS_ONE = re.compile(r"^hops = (\d+) \(consistently\)$", re.IGNORECASE)
_HOPS_RANGE = re.compile(r"^hops takes \d+ values; min hops = (\d+), max hops = (\d+)$", re.IGNORECASE)
_HOPS_LIST = re.compile(r"^hops takes \d+ values;((?:,? \d+)+)$", re.IGNORECASE)
_TTL_ONE = re.compile(r"^TTL is (\d+) \(consistently\)$")
_TTL_RANGE = re.compile(r"^TTL takes \d+ values; min=(\d+), max=(\d+)$")
_IGNORED = re.compile(
    r"^(?:SID:\s+\S+|last:\s+\S+|Percentiles:|TTL not reported|no (?:\d+-)?reordering"
    r"|\d+-reordering not handled|seq_no=\d+\s.*)$"
)
_TO_MS = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1000.0, "": 1000.0}  # owping leaves "s" unlabelled
_NTP_EPOCH = datetime(1900, 1, 1, tzinfo=timezone.utc)
_FRACTION = 2**32
_SENDER_TTL = 255


def _content_lines(text: str) -> list[tuple[int, str]]:
    """(line number, stripped line) of the non-blank lines, without owping's waiting notice."""
    return [
        (number, stripped)
        for number, line in enumerate(text.splitlines(), start=1)
        if (stripped := line.strip()) and not (stripped[0] == "A" and _WAIT.match(stripped))
    ]


def looks_like(payload: str) -> bool:
    """A summary header anywhere, or a raw ``owping -R`` packet line first."""
    if _MARKER in payload:
        return True
    for line in payload[:4096].splitlines():
        stripped = line.strip()
        if stripped and not _WAIT.match(stripped):
            return bool(RAW_LINE.match(stripped))
    return False


def _ntp_time(stamp: int) -> str:
    """A 64-bit NTP timestamp (seconds since 1900 << 32 | fraction) as RFC 3339 UTC.

    >>> _ntp_time((3918283200 << 32) + 2**31)
    '2024-03-01T12:00:00.500000Z'
    """
    seconds, fraction = divmod(stamp, _FRACTION)
    return timefmt.format_utc(_NTP_EPOCH + timedelta(seconds=seconds, microseconds=fraction * 1_000_000 // _FRACTION))


def _raw_packet(number: int, line: str) -> tuple[int, int, int, bool, bool, float | None, float | None, int]:
    """(seq, stime, rtime, ssync, rsync, serr, rerr, ttl) of one ``owping -R`` line, or ParseError."""
    match = RAW_LINE.match(line)
    if match is None:
        expected = "SEQ STIME SSYNC SERR RTIME RSYNC RERR TTL"
        raise ParseError(f"line {number}", f"not an owping -R packet line ({expected}): {quote_line(line)}")
    return _packet(match.groups(), number, line)


def _packet(groups: tuple[str, ...], number: int, line: str) -> tuple[int, int, int, bool, bool, float | None, float | None, int]:
    """The packet of one line's RAW_LINE groups, checked; ParseError names the line."""
    seq, stime, ssync, serr, rtime, rsync, rerr, ttl = groups
    try:
        seq_n, stime_n, rtime_n, ttl_n = int(seq), int(stime), int(rtime), int(ttl)
    except ValueError:  # over the 4300 digits int() reads
        raise ParseError(f"line {number}", f"a number too long to read: {quote_line(line)}") from None
    if stime_n == 0 or stime_n >= 2**64 or rtime_n >= 2**64:
        raise ParseError(f"line {number}", f"timestamps must be non-zero 64-bit NTP values: {quote_line(line)}")
    if ssync not in "01" or rsync not in "01" or ttl_n > 255:
        raise ParseError(f"line {number}", f"sync flags must be 0 or 1 and TTL at most 255: {quote_line(line)}")
    try:
        send_error = float(serr) if serr else None
        receive_error = float(rerr) if rerr else None
        plain = math.isfinite(send_error or 0.0) and math.isfinite(receive_error or 0.0)
    except ValueError:
        plain = False
    if not plain:  # text_number raises the error naming the first estimate that is not a finite number
        send_error = text_number(serr, f"line {number}") if serr else None
        receive_error = text_number(rerr, f"line {number}") if rerr else None
    if (send_error is not None and send_error < 0) or (receive_error is not None and receive_error < 0):
        raise ParseError(f"line {number}", f"negative clock error estimate: {quote_line(line)}")
    return seq_n, stime_n, rtime_n, ssync == "1", rsync == "1", send_error, receive_error, ttl_n


def _parse_raw(packets: Iterable[tuple], ctx: Context) -> list:
    """One latency record from the packets of ``owping -R`` (see :func:`_packet`)."""
    seen: set[int] = set()
    delays: list[float] = []
    ttls: list[int] = []
    clock_errors: list[float] = []
    sent = duplicates = reordered = 0
    synchronized = True
    previous: int | None = None
    first_sent: int | None = None
    for seq, stime, rtime, ssync, rsync, send_error, receive_error, ttl in packets:
        first_sent = stime if first_sent is None else min(first_sent, stime)
        if seq in seen:
            duplicates += 1
            continue
        seen.add(seq)
        sent += 1
        if rtime == 0:  # lost: only the receiver's clock state is meaningful
            synchronized = synchronized and rsync
            continue
        synchronized = synchronized and ssync and rsync
        delays.append((rtime - stime) * 1000.0 / _FRACTION)
        ttls.append(ttl)
        if previous is not None and seq < previous:
            reordered += 1
        previous = seq
        if send_error is not None and receive_error is not None:
            clock_errors.append((send_error + receive_error) * 1000.0)
    lost = sent - len(delays)
    fields: dict[str, Any] = {
        "source": ctx.source,
        "destination": ctx.destination,
        "time": _ntp_time(first_sent) if first_sent is not None else None,
        "tool": "owping",
        "one_way": True,
        "packets_sent": sent,
        "packets_received": len(delays),
        "packets_lost": lost,
        "loss_ratio": lost / sent,
        "duplicates": duplicates,
        "reordered": reordered,
        "max_clock_error_ms": max(clock_errors) if clock_errors else None,
        "clock_synchronized": synchronized,
        "ttl_min": min(ttls) if ttls else None,
        "ttl_max": max(ttls) if ttls else None,
        **delay_stats(delays),
    }
    return [record("latency", ctx, fields)]


def _blocks(lines: list[tuple[int, str]]) -> list[dict[str, Any]]:
    """Summary blocks: header match plus their lines. ``owping -v`` repeats a header after the
    per-packet lines; a header equal to the open block's, before its counts, continues it."""
    blocks: list[dict[str, Any]] = []
    for number, line in lines:
        header = _HEADER.match(line)
        if header:
            current = blocks[-1] if blocks else None
            same = current is not None and current["header"].group(1, 3) == header.group(1, 3)
            if not (same and not any(_SENT.match(text) for _, text in current["lines"])):
                blocks.append({"header": header, "number": number, "lines": []})
        elif not blocks:
            raise ParseError(f"line {number}", f"expected an owping statistics header, got {quote_line(line)}")
        else:
            blocks[-1]["lines"].append((number, line))
    return blocks


def _value(text: str, unit: str, number: int) -> float | None:
    """A delay in owping's unit as ms; None for ``nan``."""
    field = f"line {number}"
    if unit not in _TO_MS:
        raise ParseError(field, f"unknown time unit {unit!r}")
    if text.lower() in ("nan", "-nan"):
        return None
    return round(text_number(text, field) * _TO_MS[unit], 9)


def _host(text: str) -> str | None:
    return None if text in ("", "***") else text


@lru_cache(maxsize=1024)
def _is_ip(text: str | None) -> bool:
    """Whether ``text`` is a literal address; cached, as the same hosts come back run after run."""
    try:
        return text is not None and ipaddress.ip_address(text) is not None
    except ValueError:
        return False


def _direction_by_name(header: re.Match, ctx: Context) -> bool | None:
    """True/False when the block's host names say forward/reverse against the envelope, else None."""
    source, destination = header.group(1).lower(), header.group(3).lower()
    env_source, env_destination = (ctx.source or "").lower(), (ctx.destination or "").lower()
    forward = source == env_source or destination == env_destination
    reverse = source == env_destination or destination == env_source
    return forward if forward != reverse else None


def _reordered(share: float, packets: int, block: dict[str, Any]) -> int:
    """Packets reordered: ``share`` percent of ``packets``; ParseError when the product is not a
    number (counts past a float's range, which int() still reads).

    >>> _reordered(1.5, 200, {"number": 3})
    3
    >>> try:
    ...     _reordered(1.0, 10**400, {"number": 3})
    ... except ParseError as error:
    ...     print(error)
    line 3: packet counts too large: 1.0% of a 401-digit count of packets
    """
    try:
        return round(share / 100 * packets)
    except OverflowError:
        raise ParseError(f"line {block['number']}",
                         f"packet counts too large: {share}% of a {len(str(packets))}-digit count of packets") from None


def _summary_fields(block: dict[str, Any]) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    percentiles: dict[float, float | None] = {}
    for number, line in block["lines"]:
        if match := _SENT.match(line):
            sent, lost, duplicates = (whole_number(group, f"line {number}") for group in match.groups())
            if lost > sent:
                raise ParseError(f"line {number}", f"more packets lost than sent: {quote_line(line)}")
            fields.update(packets_sent=sent, packets_lost=lost, packets_received=sent - lost, duplicates=duplicates)
            fields["loss_ratio"] = lost / sent if sent else None
        elif match := _DELAY.match(line):
            low, median, high, unit, error, error_unit, unsync = match.groups()
            fields["delay_min_ms"] = _value(low, unit, number)
            fields["delay_median_ms"] = _value(median, unit, number)
            fields["delay_max_ms"] = _value(high, unit, number)
            fields["clock_synchronized"] = unsync is None
            fields["max_clock_error_ms"] = None if unsync else _value(error, error_unit, number)
        elif match := _JITTER.match(line):
            fields["jitter_ms"] = _value(match.group(1), match.group(2), number)
        elif match := _FIRST.match(line):
            try:
                fields["time"] = timefmt.normalize(match.group(1), assume_utc=True)
            except ValueError:
                raise ParseError(f"line {number}", f"not an ISO time: {quote_line(line)}") from None
        elif match := _PERCENTILE.match(line):
            percentiles[float(match.group(1))] = _value(match.group(2), match.group(3), number)
        elif match := _REORDERING.match(line):
            if match.group(1) == "1":
                fields["reordered_pct"] = text_number(match.group(2), f"line {number}")
        elif line.startswith("no ") and line.endswith("reordering") and "reordered_pct" not in fields:
            fields["reordered_pct"] = 0.0
        elif ttls := _ttl_range(line, number):
            fields["ttl_min"], fields["ttl_max"] = ttls
        elif not _IGNORED.match(line):
            raise ParseError(f"line {number}", f"not part of an owping statistics block: {quote_line(line)}")
    for key, name in (("packets_sent", "sent/lost"), ("delay_median_ms", "one-way delay"),
                      ("jitter_ms", "one-way jitter"), ("reordered_pct", "reordering")):  # fmt: skip
        if key not in fields:
            raise ParseError(f"{name} line", f"missing from the owping block at line {block['number']}")
    fields["reordered"] = _reordered(fields.pop("reordered_pct"), fields["packets_received"] + fields["duplicates"], block)
    median, jitter = fields["delay_median_ms"], fields["jitter_ms"]
    derived = round(median + jitter, 9) if median is not None and jitter is not None else None
    fields["delay_p95_ms"] = percentiles[95.0] if percentiles.get(95.0) is not None else derived
    return fields


def _ttl_range(line: str, number: int) -> tuple[int, int] | None:
    """(ttl_min, ttl_max) from a TTL or hops line; hops are counted down from TTL 255."""
    if match := _TTL_ONE.match(line):
        values = [whole_number(match.group(1), f"line {number}")]
    elif match := _TTL_RANGE.match(line):
        values = [whole_number(match.group(1), f"line {number}"), whole_number(match.group(2), f"line {number}")]
    elif match := _HOPS_ONE.match(line) or _HOPS_RANGE.match(line):
        values = [_SENDER_TTL - whole_number(hops, f"line {number}") for hops in match.groups()]
    elif match := _HOPS_LIST.match(line):
        values = [_SENDER_TTL - whole_number(hops, f"line {number}") for hops in match.group(1).replace(",", " ").split()]
    else:
        return None
    if not all(0 <= value <= 255 for value in values):
        raise ParseError(f"line {number}", f"TTL/hops out of range: {quote_line(line)}")
    return min(values), max(values)


def _parse_summary(lines: list[tuple[int, str]], ctx: Context) -> list:
    blocks = _blocks(lines)
    if len(blocks) > 2:
        raise ParseError(f"line {blocks[2]['number']}", "owping prints at most two directions (forward, reverse)")
    named = [_direction_by_name(block["header"], ctx) for block in blocks]
    if None in named or len(set(named)) != len(named):
        named = [index == 0 for index in range(len(blocks))]
    records = []
    for block, forward in zip(blocks, named):
        source, destination = _host(block["header"].group(1)), _host(block["header"].group(3))
        env_source, env_destination = (ctx.source, ctx.destination) if forward else (ctx.destination, ctx.source)
        fields = {
            "source": ctx.endpoint(env_source, source),
            "destination": ctx.endpoint(env_destination, destination),
            "source_ip": source if _is_ip(source) else None,
            "destination_ip": destination if _is_ip(destination) else None,
            "time": ctx.collected_at,
            "tool": "owping",
            "one_way": True,
            **_summary_fields(block),
        }
        records.append(record("latency", ctx, fields))
    return records


def parse(payload: str, ctx: Context) -> list:
    """One latency record per direction: one for raw ``-R`` output, one or two for summaries."""
    lines = _content_lines(payload)
    if not lines:
        raise ParseError("payload", "empty owping output")
    if _MARKER in payload:
        return _parse_summary(lines, ctx)
    return _parse_raw((_raw_packet(number, line) for number, line in lines), ctx)


FORMAT = Format(
    name="owping",
    payload="text",
    summary="owping text: raw -R packet lines or the per-direction statistics summary",
    looks_like=looks_like,
    parse=parse,
    example="owping.jsonl",
)
