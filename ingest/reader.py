"""Split input into items: envelopes or bare tool outputs, each with where it came from.

A file may hold one JSON document (pretty-printed or not), a JSON array of them, JSON Lines,
or the text output of one tool run. Each item keeps its location ("line 3", "item 2") and
its raw bytes so that rejects can be reported and dead-lettered exactly.

:func:`read_items` splits bytes already in memory (a Kafka message); :func:`read_stream`
reads a file or standard input and streams JSON Lines one line at a time, so memory follows
the largest line, not the file. Both give the same items for the same bytes, within
:class:`Limits`: a line (or an input read whole) over ``max_line_bytes`` and JSON nested
deeper than ``max_depth`` are rejects with the reason, never decoded into memory or crashes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, BinaryIO

import orjson

from .errors import ParseError

MIB = 2**20


@dataclass(frozen=True)
class Limits:
    """What one item may be before it is refused unread.

    ``max_line_bytes`` (64 MiB): the most bytes read into memory as one unit: a JSON Lines line,
    or a whole input that is not JSON Lines (one document, a JSON array, tool text). The largest
    real outputs are a few MiB (an iperf3 ``--json`` run of hours with per-second intervals
    and several streams, a day of RIPE Atlas results as one array); decoding one line takes
    several times its size in memory, so 64 MiB keeps a run under a GB. Kafka carries 8 MiB at
    most (``message.max.bytes``). ``max_depth`` (64): JSON nesting, envelope included; the
    deepest real output (pscheduler's run results wrapping a tool's JSON in an envelope) is
    under 12. orjson itself stops at 1024, and re-serialises at most 254.
    """

    max_line_bytes: int = 64 * MIB
    max_depth: int = 64


DEFAULT_LIMITS = Limits()
_NOT_SPACE = re.compile(rb"\S")
_CHUNK = MIB  # the skip over an oversized line reads this much at a time
_JSON_SPACE = b" \t\r\n"
_DEPTH = "(the depth limit)"


@dataclass(frozen=True)
class Item:
    """One input unit: ``value`` is decoded JSON or text; ``error`` is set when it could not be read.

    ``unread``: the unit was over the line limit and skipped unread, so ``raw`` is empty.
    """

    location: str
    raw: bytes
    value: Any = None
    error: ParseError | None = None
    unread: bool = False


def _decode_text(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ParseError("payload", f"not UTF-8 text (byte {error.start})") from None


def read_items(data: bytes, limits: Limits = DEFAULT_LIMITS) -> Iterator[Item]:
    """Items in ``data``, in order.

    >>> [i.value for i in read_items(b'{"a": 1}\\n{"a": 2}\\n')]
    [{'a': 1}, {'a': 2}]
    >>> next(read_items(b"traceroute to x (1.2.3.4)\\n")).value[:10]
    'traceroute'
    >>> next(read_items(b'{"a": [[[1]]]}', Limits(max_depth=3))).error.reason
    'JSON nested deeper than 3 levels (the depth limit)'
    """
    stripped = data.lstrip()
    if not stripped:
        yield Item("input", data, error=_EMPTY.error) if len(data) <= limits.max_line_bytes else _EMPTY
        return
    if len(data) > limits.max_line_bytes:
        if stripped[:1] == b"{":
            yield from _json_lines(data, limits)
        else:
            yield _oversized("input", len(data), limits)
        return
    if stripped[:1] in (b"{", b"["):
        try:
            document = orjson.loads(data)
        except orjson.JSONDecodeError as error:
            if stripped[:1] == b"{":
                yield from _json_lines(data, limits)
            else:
                yield Item("line 1", data, error=_json_error(error, limits))
            return
        if isinstance(document, list):
            yield from _array_items(data, document, limits)
        else:
            yield _checked(Item("line 1", data, document), limits)
        return
    try:
        yield Item("line 1", data, _decode_text(data))
    except ParseError as error:
        yield Item("line 1", data, error=error)


def _array_items(data: bytes, document: list, limits: Limits) -> Iterator[Item]:
    if not document:
        yield Item("input", data, error=ParseError(None, "empty JSON array"))
    for index, element in enumerate(document, start=1):
        yield _checked(Item(f"item {index}", _dumps_deep(element), element), limits)


def _json_lines(data: bytes, limits: Limits) -> Iterator[Item]:
    return _stream_json_lines(_split_lines(data, limits.max_line_bytes), limits)


def _split_lines(data: bytes, max_bytes: int) -> Iterator[bytes | _Oversized]:
    """The lines of ``data`` up to and with their ``\\n``, as :func:`_physical_lines` reads them from a stream."""
    start = 0
    while start < len(data):
        end = data.find(b"\n", start)
        stop = len(data) if end < 0 else end + 1
        size = stop - start - (end >= 0)
        if size > max_bytes:
            found = _NOT_SPACE.search(data, start, stop)  # its first byte that is not white space, as _skip_line finds it
            yield _Oversized(size, stop - start, found.group() if found else b"")
        else:
            yield data[start:stop]
        start = stop


def _json_line(number: int, line: bytes, limits: Limits) -> Item:
    """The item of one JSON Lines line (not blank): decoded, or the reason it is not."""
    location = f"line {number}"
    if len(line) > limits.max_line_bytes:
        return _oversized(location, len(line), limits)
    try:
        return _checked(Item(location, line, orjson.loads(line)), limits)
    except orjson.JSONDecodeError as error:
        return Item(location, line, error=_json_error(error, limits))


def _oversized(location: str, size: int, limits: Limits) -> Item:
    """The reject of a unit over the line limit: its size and the limit, no bytes kept."""
    what = "line" if location.startswith("line") else "input (not JSON Lines, so read whole)"
    reason = (f"{what} of {size} bytes is over the limit of {limits.max_line_bytes} bytes "
              f"(max_line_bytes, --max-line-bytes): not decoded")
    return Item(location, b"", error=ParseError(None, reason), unread=True)


def _json_error(error: orjson.JSONDecodeError, limits: Limits) -> ParseError:
    if "depth limit" in str(error) or "recursion" in str(error).lower():  # orjson's own: 1024 levels
        return _depth_error(None, limits)
    return ParseError(None, f"invalid JSON: {error}")


def _depth_error(field: str | None, limits: Limits) -> ParseError:
    return ParseError(field, f"JSON nested deeper than {limits.max_depth} levels {_DEPTH}")


def _checked(item: Item, limits: Limits) -> Item:
    """``item``, or the same item rejected when its value is nested deeper than the limit."""
    too_deep = _too_deep(item.value, limits) if _may_be_deep(item.raw, limits.max_depth) else None
    return item if too_deep is None else Item(item.location, item.raw, error=too_deep)


def _may_be_deep(raw: bytes, max_depth: int) -> bool:
    """False when ``raw`` has too few brackets to nest past ``max_depth`` (the cheap, common case)."""
    return raw.count(b"{") + raw.count(b"[") > max_depth


def _too_deep(value: Any, limits: Limits) -> ParseError | None:
    """The depth error naming the first field past ``max_depth`` levels, or None; never recursive.

    >>> _too_deep({"a": [{"b": [1]}]}, Limits(max_depth=3)).field
    'a.0.b'
    >>> _too_deep({"a": [{"b": [1]}]}, Limits(max_depth=4)) is None
    True
    """
    max_depth = limits.max_depth
    level = [value] if isinstance(value, (dict, list)) else []
    depth = 0
    while level:
        depth += 1
        if depth > max_depth:
            return _depth_error(_deep_field(value, max_depth), limits)
        level = [child for node in level for child in (node.values() if isinstance(node, dict) else node)
                 if isinstance(child, (dict, list))]
    return None


def _deep_field(value: Any, max_depth: int, limit: int = 120) -> str | None:
    """Dotted path to the first container at depth ``max_depth`` + 1, cut to ``limit`` characters."""
    path: list[str] = []
    node = value
    for _ in range(max_depth):
        children = node.items() if isinstance(node, dict) else enumerate(node)
        step = next(((key, child) for key, child in children if _deeper_than(child, max_depth - len(path) - 1)), None)
        if step is None:
            break
        path.append(str(step[0]))
        node = step[1]
    text = ".".join(path)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _deeper_than(value: Any, depth: int) -> bool:
    """Whether ``value`` is a container nested more than ``depth`` levels deep (itself included)."""
    level = [value] if isinstance(value, (dict, list)) else []
    for _ in range(depth):
        if not level:
            return False
        level = [child for node in level for child in (node.values() if isinstance(node, dict) else node)
                 if isinstance(child, (dict, list))]
    return bool(level)


def _dumps_deep(value: Any) -> bytes:
    """JSON of ``value`` at any depth (orjson refuses past 254 levels), written without recursion.

    >>> deep = [{"a": 1, "b": [2, 3]}, None]
    >>> for _ in range(300):
    ...     deep = [deep]
    >>> _dumps_deep(deep) == b"[" * 300 + b'[{"a":1,"b":[2,3]},null]' + b"]" * 300
    True
    """
    try:
        return orjson.dumps(value)
    except TypeError:
        pass
    out: list[bytes] = []
    stack: list[Any] = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, bytes):  # a token pushed below; decoded JSON holds no bytes
            out.append(node)
        elif isinstance(node, dict):
            stack.append(b"}")
            for index, (key, child) in enumerate(reversed(node.items())):
                stack.extend(([b","] if index else []) + [child, orjson.dumps(key) + b":"])
            stack.append(b"{")
        elif isinstance(node, list):
            stack.append(b"]")
            for index, child in enumerate(reversed(node)):
                stack.extend(([b","] if index else []) + [child])
            stack.append(b"[")
        else:
            out.append(orjson.dumps(node))
    return b"".join(out)


# --- streaming ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _Blank:
    """Blank lines at the start of an input, more bytes than the line limit: counted, not kept."""

    pieces: int
    size: int


_EMPTY = Item("input", b"", error=ParseError(None, "empty input"))


@dataclass(frozen=True)
class _Oversized:
    """A physical line over the limit, skipped unread: only its size is known."""

    size: int  # without its line end
    read: int  # with it
    first: bytes = b""  # its first byte that is not white space: is it a JSON object?


def read_stream(stream: BinaryIO, limits: Limits = DEFAULT_LIMITS) -> Iterator[Item]:
    """Items of a binary stream, in order: the items :func:`read_items` gives for its bytes.

    JSON Lines are read one line at a time. Whether the input is JSON Lines is decided by its
    first line that is not blank: one that starts with ``{`` and is a JSON value on its own.
    Anything else (a pretty-printed document, a JSON array, tool text) is read whole, up to
    ``max_line_bytes``.

    >>> import io
    >>> [(i.location, i.value) for i in read_stream(io.BytesIO(b'{"a": 1}\\n\\n{"a": 2}\\n'))]
    [('line 1', {'a': 1}), ('line 3', {'a': 2})]
    >>> next(read_stream(io.BytesIO(b'{"a": "' + b'x' * 99 + b'"}\\n'), Limits(max_line_bytes=64))).error.reason
    'line of 108 bytes is over the limit of 64 bytes (max_line_bytes, --max-line-bytes): not decoded'
    """
    lines = _physical_lines(stream, limits.max_line_bytes)
    head = _head(lines, limits.max_line_bytes)
    first = head[-1] if head else b""
    if isinstance(first, _Blank) or (isinstance(first, bytes) and not first.strip()):  # blank, or nothing at all
        yield from read_items(b"".join(head), limits) if all(isinstance(line, bytes) for line in head) else [_EMPTY]
        return
    if _starts_json_lines(first, limits):
        yield from _stream_json_lines(_chain(head, lines), limits)
        return
    whole, read = _read_whole(head, lines, limits.max_line_bytes)
    if whole is not None:
        yield from read_items(whole, limits)
    elif (first.first if isinstance(first, _Oversized) else first.lstrip()[:1]) == b"{":  # over the limit: JSON Lines with a broken first line, as read_items reads it
        yield from _stream_json_lines(_chain(read, lines), limits)
    else:
        yield _oversized("input", _size(read) + _size(lines), limits)


def _head(lines: Iterator[bytes | _Oversized], max_bytes: int) -> list[bytes | _Oversized | _Blank]:
    """The lines up to the first that is not blank (blank ones past ``max_bytes`` counted, not kept)."""
    head: list = []
    size = 0
    for line in lines:
        if line.first if isinstance(line, _Oversized) else line.strip():
            return head + [line]
        if isinstance(line, _Oversized):  # white space over the limit: blank, counted
            pieces = sum(part.pieces if isinstance(part, _Blank) else len(part.splitlines()) for part in head)
            head, size = [_Blank(pieces + 1, size + line.read)], size + line.read
            continue
        size += len(line)
        if size <= max_bytes:
            head.append(line)
        else:
            pieces = sum(part.pieces if isinstance(part, _Blank) else len(part.splitlines()) for part in head)
            head = [_Blank(pieces + len(line.splitlines()), size)]
    return head


def _physical_lines(stream: BinaryIO, max_bytes: int) -> Iterator[bytes | _Oversized]:
    """The stream's lines up to and with their ``\\n``; a line over ``max_bytes`` is skipped in chunks."""
    while True:
        line = stream.readline(max_bytes + 1)
        if not line:
            return
        if len(line) <= max_bytes or line.endswith(b"\n"):
            box = [line]
            del line
            yield box.pop()  # this frame keeps no reference: a long line is freed once split
        else:
            yield _skip_line(stream, len(line), line.lstrip()[:1])


def _skip_line(stream: BinaryIO, size: int, first: bytes) -> _Oversized:
    """Read past the rest of a line already ``size`` bytes long, a chunk at a time."""
    while True:
        rest = stream.readline(_CHUNK)
        size += len(rest)
        first = first or rest.lstrip()[:1]  # (b"" to the end: the whole line is white space)
        if not rest or rest.endswith(b"\n"):
            break
    return _Oversized(size - rest.endswith(b"\n"), size, first)


def _starts_json_lines(line: bytes | _Oversized, limits: Limits) -> bool:
    """Whether the first non-blank line makes the input JSON Lines: a ``{`` line that is JSON on
    its own, or too long to tell."""
    if isinstance(line, _Oversized):
        return line.first == b"{"
    pieces = [piece for piece in line.splitlines() if piece.strip()]
    if not pieces or pieces[0].lstrip()[:1] != b"{":
        return False
    error = _json_line(1, pieces[0], limits).error
    return error is None or not error.reason.startswith("invalid JSON")


def _chain(head: Iterable, rest: Iterable) -> Iterator[bytes | _Oversized]:
    yield from head
    yield from rest


def _size(lines: Iterable[bytes | _Oversized]) -> int:
    return sum(len(line) if isinstance(line, bytes) else line.read if isinstance(line, _Oversized) else line.size
               for line in lines)


def _read_whole(head: list, lines: Iterator, max_bytes: int) -> tuple[bytes | None, list]:
    """(the whole input, None once it passes ``max_bytes``) and the lines read for it."""
    read = list(head)
    size = _size(read)
    for line in lines if size <= max_bytes else ():
        read.append(line)
        size += _size([line])
        if size > max_bytes:
            break
    return (b"".join(read) if size <= max_bytes else None), read


class _Document:
    """The bytes read while a JSON Lines input may still be one document (one line, blank lines)."""

    def __init__(self, max_bytes: int):
        self.parts: list[bytes] | None = []
        self.size, self.max_bytes = 0, max_bytes

    def add(self, line: bytes | _Oversized | _Blank) -> None:
        if self.parts is None:
            return
        self.size += _size([line])
        if not isinstance(line, bytes) or self.size > self.max_bytes:
            self.parts = None
        else:
            self.parts.append(line)

    def whole(self) -> bytes | None:
        return None if self.parts is None else b"".join(self.parts)


def _stream_json_lines(lines: Iterable[bytes | _Oversized], limits: Limits) -> Iterator[Item]:
    """JSON Lines items, numbered as ``bytes.splitlines`` numbers them; an input of one line is
    one document, raw bytes and all, as :func:`read_items` reads it."""
    number = 0
    document: _Document | None = _Document(limits.max_line_bytes)
    held: Item | None = None  # the first item, until a second shows the input is not one document
    for line in lines:
        if document is not None:
            document.add(line)
        box = [line]
        del line  # _line_items frees the physical line once it is split, before decoding
        items, number = _line_items(box, number, limits)
        for item in items:
            if document is not None and held is None:
                held = item
                continue
            document = None
            if held is not None:
                yield held
                held = None
            yield item
    if held is not None:
        yield _one_document(held, document.whole() if document is not None else None)


def _line_items(box: list, number: int, limits: Limits) -> tuple[list[Item], int]:
    """(items of the non-blank lines in one physical line, last line number); ``\\r`` also ends a line.

    ``box`` holds the line and is emptied, so that a long line is not kept beside its pieces.
    """
    line = box.pop()
    if isinstance(line, _Blank):
        return [], number + line.pieces
    if isinstance(line, _Oversized):  # (one that is all white space is a blank line, however long)
        return ([_oversized(f"line {number + 1}", line.size, limits)] if line.first else []), number + 1
    pieces = line.splitlines()
    del line
    items = [_json_line(number + index, piece, limits) for index, piece in enumerate(pieces, start=1) if piece.strip()]
    return items, number + len(pieces)


def _one_document(item: Item, whole: bytes | None) -> Item:
    """The only line of an input: the whole input (blank lines and all) as one document when it
    parses whole, which it does when the rest is JSON whitespace."""
    decoded = item.error is None or (item.error.field is not None and item.error.reason.endswith(_DEPTH))
    if whole is None or not decoded or whole.strip(_JSON_SPACE) != item.raw.strip(_JSON_SPACE):
        return item
    return Item("line 1", whole, item.value, item.error)
