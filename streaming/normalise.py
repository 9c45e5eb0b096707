"""Normalise: one raw-topic message in, canonical records or one dead letter out.

The pure step the normalise job runs per Kafka message (no Flink, no I/O), so it can be tested
and replayed alone. Every message ends either as one or more records or as exactly one dead
letter: ``len(out) >= 1`` always, which is what lets counts reconcile.

>>> out = normalise(b'{"format": "nope", "payload": "x"}', Origin("pathwatch.raw", 0, 7), 0)
>>> [(o.target, o.value["stage"], o.value["field"]) for o in out]
[('dead', 'normalise', 'format')]
"""

from __future__ import annotations

import base64
import uuid
from dataclasses import dataclass
from typing import Any, Callable

import orjson

from pathwatch.contract.ids import PATHWATCH_NAMESPACE
from pathwatch.contract.timefmt import format_utc
from pathwatch.ingest.parse import Defaults, parse_item
from pathwatch.ingest.reader import read_items
from pathwatch.contract.keys import path_key
from pathwatch.models.observe import epoch

RECORD, DEAD = "record", "dead"
_NO_DEFAULTS = Defaults()  # the raw topic forces no format, endpoints or collection time


@dataclass(frozen=True)
class Origin:
    """Where a message was read: topic, partition, offset (what makes a dead letter's id unique)."""

    topic: str
    partition: int | None
    offset: int | None


@dataclass(frozen=True)
class Output:
    """``target`` is RECORD or DEAD; ``key`` the Kafka key; ``value`` the JSON object, ``text`` its
    JSON (what goes on the topic); ``time_ms`` its event time."""

    target: str
    key: str
    value: dict[str, Any]
    time_ms: int
    text: bytes = b""


def _dead(body: bytes, origin: Origin, received_ms: int, reason: str, field: str | None = None,
          fmt: str | None = None) -> Output:
    value = dead_letter(body, origin, received_ms, "normalise", reason, field, fmt)
    return Output(DEAD, value["id"], value, received_ms, orjson.dumps(value))


def first_field(value: Any, is_bad: Callable[[Any], bool], where: str = "") -> str | None:
    """The field (dotted path) of the first scalar of a JSON value for which ``is_bad`` holds, or None."""
    if isinstance(value, (dict, list)):
        for key, inner in (value.items() if isinstance(value, dict) else enumerate(value)):
            found = first_field(inner, is_bad, f"{where}.{key}" if where else str(key))
            if found is not None:
                return found
        return None
    return where if is_bad(value) else None


def _beyond_64_bits(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and not -2**63 <= value < 2**63


def _holds_nul(value: Any) -> bool:
    return isinstance(value, str) and "\x00" in value


def oversized_integer(value: Any) -> str | None:
    """The field (dotted path) of the first integer JSON consumers cannot hold in 64 bits, or None.

    >>> oversized_integer({"mss_bytes": 10**20, "hops": [{"asn": 1}]})
    'mss_bytes'
    >>> oversized_integer({"hops": [{"asn": 1}, {"asn": -2**64}]})
    'hops.1.asn'
    """
    return first_field(value, _beyond_64_bits)


def nul_field(value: Any) -> str | None:
    """The field (dotted path) of the first string holding a NUL character, or None: PostgreSQL
    text cannot hold one, so such a record would stop the store job instead of being stored.

    >>> nul_field({"source": "a", "hops": [{"hostname": "x"}, {"hostname": "r1\\x00.example"}]})
    'hops.1.hostname'
    """
    return first_field(value, _holds_nul)


def dead_letter(body: bytes, origin: Origin, received_ms: int, stage: str, reason: str,
                field: str | None = None, fmt: str | None = None, identity: str | None = None) -> dict[str, Any]:
    """The dead-letter object: the original bytes (text, or base64 when not UTF-8 or holding a NUL,
    which PostgreSQL text cannot store), reason, origin.

    Its id is a uuid5 of the stage and the message's place in its topic, or of ``identity``
    (e.g. a record id) when the place is not known.
    """
    try:
        text, encoding = body.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        text, encoding = None, "base64"
    if text is None or "\x00" in text:
        text, encoding = base64.b64encode(body).decode("ascii"), "base64"
    key = f"{stage}|{identity}" if identity is not None else f"{stage}|{origin.topic}|{origin.partition}|{origin.offset}"
    return {
        "id": str(uuid.uuid5(PATHWATCH_NAMESPACE, key)), "stage": stage, "reason": reason, "field": field,
        "format": fmt, "topic": origin.topic, "kafka_partition": origin.partition,
        "kafka_offset": origin.offset, "received_at": format_utc_ms(received_ms),
        "input": text, "input_encoding": encoding,
    }


def format_utc_ms(ms: int) -> str:
    from datetime import datetime, timezone

    return format_utc(datetime.fromtimestamp(ms / 1000, tz=timezone.utc))


def normalise(body: bytes, origin: Origin, received_ms: int, max_future_ms: int | None = None) -> list[Output]:
    """Records of one message, or a single dead letter naming the field and reason of the first error.

    A message holding several items (a JSON array or lines) is all-or-nothing: one bad item
    dead-letters the whole message, so it can be fixed and replayed as the unit it arrived as.
    Records take the lean path (``as_dicts``): the JSON-ready dicts the record models would dump,
    checked by the same rules, without building the models.

    ``max_future_ms`` (the job passes its setting): a record whose time is further than that
    ahead of ``received_ms`` is refused. Its measuring host's clock is wrong, and as a record it
    would do harm: Kafka refuses a message stamped that far ahead (the normalise job would fail
    on it again at every restart, stalling its partition), and the detectors' event time would
    jump ahead for every path.

    >>> body = b'{"format": "ping", "source": "a", "destination": "b", "collected_at": "2030-01-01T00:00:00Z", "payload": "ping: unknown host b"}'
    >>> [(o.target, o.value["field"]) for o in normalise(body, Origin("raw", 0, 1), 1_700_000_000_000, 600_000)]
    [('dead', 'time')]
    """
    records: list[Output] = []
    for item in read_items(body):
        outcome = parse_item(item, _NO_DEFAULTS, as_dicts=True)
        where = f"{item.location}: " if item.location not in ("line 1", "input") else ""
        if outcome.error is not None:
            return [_dead(body, origin, received_ms, where + outcome.error.reason, outcome.error.field, outcome.format)]
        for data in outcome.records:
            # An integer beyond 64 bits: no consumer (Flink SQL, SQL bigint) holds it. orjson refuses
            # those below -2**63 or from 2**64, and writes those from 2**63 (unsigned), so a record
            # with an integer beyond 53 bits (which the strict write refuses; nearly none has one) is
            # searched for one beyond 64. Cheaper than searching every record's text for 19 digits.
            try:
                text, field = orjson.dumps(data, option=orjson.OPT_STRICT_INTEGER), None
            except orjson.JSONEncodeError:
                field = oversized_integer(data)
                try:
                    text = orjson.dumps(data)
                except orjson.JSONEncodeError:
                    text = None
            if text is None or field is not None:
                return [_dead(body, origin, received_ms, f"{where}{field}: an integer beyond 64 bits",
                              field, outcome.format)]
            field = nul_field(data) if b"\\u0000" in text else None   # how orjson writes NUL
            if field is not None:
                return [_dead(body, origin, received_ms, f"{where}{field}: a NUL character (not storable as text)",
                              field, outcome.format)]
            time_ms = int(round(epoch(data["time"]) * 1000))
            if max_future_ms is not None and time_ms > received_ms + max_future_ms:
                ahead = (time_ms - received_ms) / 3_600_000
                return [_dead(body, origin, received_ms,
                              f"{where}time: {data['time']} is {ahead:.1f} h ahead of the pipeline's clock (more than "
                              f"{max_future_ms / 1000:g} s): the measuring host's clock is wrong", "time", outcome.format)]
            records.append(Output(RECORD, path_key(data.get("source"), data.get("destination")), data, time_ms, text))
    if not records:
        return [_dead(body, origin, received_ms, "no measurement in this input (the tool output holds no result)")]
    return records
