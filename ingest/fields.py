"""Typed look-ups into decoded JSON that raise :class:`ParseError` naming the field.

Parsers use these instead of ``obj["key"]`` so that mutated or truncated input fails with
the project's own error, never a ``KeyError`` or ``TypeError``.

>>> need({"a": {"b": 2}}, "a", dict, "")["b"]
2
>>> try:
...     number({"rtt": "x"}, "rtt", "hop")
... except ParseError as error:
...     print(error)
hop.rtt: expected a number, got str
"""

from __future__ import annotations

import math
from typing import Any

from pathwatch.contract import timefmt

from .errors import ParseError

_TYPE_NAMES = {dict: "an object", list: "an array", str: "a string", bool: "a boolean", int: "an integer"}


def join(where: str, key: str | int) -> str:
    """Dotted path of ``key`` inside ``where``: ``join("end", "sum")`` is ``"end.sum"``."""
    if isinstance(key, int):
        return f"{where}[{key}]"
    return f"{where}.{key}" if where else key


def _type_name(kind: type | tuple[type, ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join(_TYPE_NAMES.get(k, k.__name__) for k in kinds)


def check(value: Any, kind: type | tuple[type, ...], field: str) -> Any:
    """``value`` if it is a ``kind`` (bools are never integers), else a ParseError."""
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if isinstance(value, bool) and bool not in kinds:
        raise ParseError(field, f"expected {_type_name(kind)}, got bool")
    if not isinstance(value, kinds):
        raise ParseError(field, f"expected {_type_name(kind)}, got {type(value).__name__}")
    return value


def obj(value: Any, field: str) -> dict:
    """``value`` as a JSON object."""
    if value.__class__ is dict:
        return value
    return check(value, dict, field)


def _plain(value: Any, kind: type | tuple[type, ...]) -> bool:
    """Fast path: ``value`` is exactly ``kind``, or a ``kind`` that is not a bool standing in for a number."""
    return value.__class__ is kind or (isinstance(value, kind) and value.__class__ is not bool)


def need(container: Any, key: str, kind: type | tuple[type, ...], where: str) -> Any:
    """Required ``container[key]`` of type ``kind``."""
    if not isinstance(container, dict):
        raise ParseError(where or None, f"expected an object, got {type(container).__name__}")
    value = container.get(key)
    if _plain(value, kind):
        return value
    if value is None:
        raise ParseError(join(where, key), "missing")
    return check(value, kind, join(where, key))


def opt(container: dict, key: str, kind: type | tuple[type, ...], where: str, default: Any = None) -> Any:
    """Optional ``container[key]``: ``default`` when absent or null, else checked like :func:`need`."""
    value = container.get(key)
    if value is None:
        return default
    if _plain(value, kind):
        return value
    return check(value, kind, join(where, key))


def _finite(value: Any, field: str) -> float | int:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ParseError(field, f"expected a number, got {type(value).__name__}")
    if isinstance(value, float) and not math.isfinite(value):
        raise ParseError(field, f"expected a finite number, got {value}")
    return value


def number(container: Any, key: str, where: str, *, required: bool = True, minimum: float | None = None) -> Any:
    """A finite int or float at ``container[key]``; ``None`` when optional and absent."""
    if container.__class__ is dict:  # fast path for a plain number
        value = container.get(key)
        kind = value.__class__
        if (kind is int or (kind is float and math.isfinite(value))) and (minimum is None or value >= minimum):
            return value
    elif not isinstance(container, dict):
        raise ParseError(where or None, f"expected an object, got {type(container).__name__}")
    value = container.get(key)
    if value is None:
        if required:
            raise ParseError(join(where, key), "missing")
        return None
    kind = value.__class__
    if not (kind is int or (kind is float and math.isfinite(value))):  # fast path for plain numbers
        value = _finite(value, join(where, key))
    if minimum is not None and value < minimum:
        raise ParseError(join(where, key), f"must be >= {minimum:g}, got {value}")
    return value


def integer(container: Any, key: str, where: str, *, required: bool = True, minimum: int | None = 0) -> int | None:
    """A whole number (an integral float such as ``3.0`` is accepted) at ``container[key]``."""
    if container.__class__ is dict:  # fast path for a plain int
        value = container.get(key)
        if value.__class__ is int and (minimum is None or value >= minimum):
            return value
    value = number(container, key, where, required=required, minimum=minimum)
    if value is None:
        return None
    if isinstance(value, float):
        if not value.is_integer():
            raise ParseError(join(where, key), f"expected an integer, got {value}")
        value = int(value)
    return value


def plain_count(value: Any) -> bool:
    """``value`` is an int >= 0, which :func:`integer` (minimum 0) returns as it is.

    Fast paths test values with this and :func:`plain_amount`, and leave everything else to
    the helpers above, which convert it or raise the ParseError.
    """
    return value.__class__ is int and value >= 0


def plain_amount(value: Any) -> bool:
    """``value`` is a finite int or float >= 0, which :func:`number` (minimum 0) returns as it is."""
    kind = value.__class__
    return (kind is int or (kind is float and math.isfinite(value))) and value >= 0


def text_number(text: str, field: str, kind: type = float) -> Any:
    """Parse a number out of tool text, as ParseError on failure: ``text_number("1.5", "rtt")``.

    >>> try:
    ...     text_number("1" * 5000, "ttl", int)
    ... except ParseError as error:
    ...     print(error)
    ttl: expected a number, got '1111111111111111111111111111111111111...' (5000 characters)
    """
    try:
        value = kind(text)
    except (TypeError, ValueError):  # int() also refuses over 4300 digits
        raise ParseError(field, f"expected a number, got {shown(text)}") from None
    if isinstance(value, float) and not math.isfinite(value):
        raise ParseError(field, f"expected a finite number, got {shown(text)}")
    return value


def whole_number(text: str, field: str) -> int:
    """The int of a run of digits matched in tool text; ParseError where ``int`` refuses it (over
    4300 digits, or Unicode digits that ``str.isdigit`` accepts and ``int`` does not).

    >>> whole_number("42", "ttl")
    42
    >>> try:
    ...     whole_number("\u00b2", "ttl")
    ... except ParseError as error:
    ...     print(error)
    ttl: expected a number, got '\u00b2'
    """
    try:
        return int(text)
    except ValueError:
        raise ParseError(field, f"expected a number, got {shown(text)}") from None


def cut(text: str, limit: int = 40) -> str:
    """``text`` cut to ``limit`` characters for a field name: ``cut("x" * 50, 10)`` is ``'xxxxxxx...'``."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


def shown(text: Any, limit: int = 40) -> str:
    """``text`` for an error message: its repr, cut to ``limit`` characters with its length.

    >>> shown("abc"), shown("x" * 50, 10)
    ("'abc'", "'xxxxxxx...' (50 characters)")
    """
    if not isinstance(text, str):
        return repr(text)[:limit]
    return repr(text) if len(text) <= limit else f"{text[: limit - 3] + '...'!r} ({len(text)} characters)"


def epoch_time(container: Any, key: str, where: str, *, fraction: float = 0.0) -> str:
    """RFC 3339 UTC time from Unix seconds at ``container[key]`` (plus ``fraction`` s).

    >>> epoch_time({"timestamp": 1700000000}, "timestamp", "")
    '2023-11-14T22:13:20Z'
    """
    seconds = number(container, key, where, minimum=0) + fraction
    try:
        return timefmt.from_epoch(seconds)
    except (OverflowError, OSError, ValueError):
        raise ParseError(join(where, key), f"not a usable time: {seconds} s since 1970") from None
