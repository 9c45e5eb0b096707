"""Split input bytes into items: envelopes or bare tool outputs, each with where it came from.

A file may hold one JSON document (pretty-printed or not), a JSON array of them, JSON Lines,
or the text output of one tool run. Each item keeps its location ("line 3", "item 2") and
its raw bytes so that rejects can be reported and dead-lettered exactly.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import orjson

from .errors import ParseError


@dataclass(frozen=True)
class Item:
    """One input unit: ``value`` is decoded JSON or text; ``error`` is set when it could not be read."""

    location: str
    raw: bytes
    value: Any = None
    error: ParseError | None = None


def _decode_text(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ParseError("payload", f"not UTF-8 text (byte {error.start})") from None


def read_items(data: bytes) -> Iterator[Item]:
    """Items in ``data``, in order.

    >>> [i.value for i in read_items(b'{"a": 1}\\n{"a": 2}\\n')]
    [{'a': 1}, {'a': 2}]
    >>> next(read_items(b"traceroute to x (1.2.3.4)\\n")).value[:10]
    'traceroute'
    """
    stripped = data.lstrip()
    if not stripped:
        yield Item("input", data, error=ParseError(None, "empty input"))
        return
    if stripped[:1] in (b"{", b"["):
        try:
            document = orjson.loads(data)
        except orjson.JSONDecodeError as error:
            if stripped[:1] == b"{":
                yield from _json_lines(data)
            else:
                yield Item("line 1", data, error=ParseError(None, f"invalid JSON: {error}"))
            return
        if isinstance(document, list):
            if not document:
                yield Item("input", data, error=ParseError(None, "empty JSON array"))
            for index, element in enumerate(document, start=1):
                yield Item(f"item {index}", orjson.dumps(element), element)
        else:
            yield Item("line 1", data, document)
        return
    try:
        yield Item("line 1", data, _decode_text(data))
    except ParseError as error:
        yield Item("line 1", data, error=error)


def _json_lines(data: bytes) -> Iterator[Item]:
    for number, line in enumerate(data.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            yield Item(f"line {number}", line, orjson.loads(line))
        except orjson.JSONDecodeError as error:
            yield Item(f"line {number}", line, error=ParseError(None, f"invalid JSON: {error}"))
