"""The raw envelope collectors publish: ``{format, source, destination, collected_at, payload}``.

It is the replayable source of truth; ``contract/schemas/envelope.v1.schema.json``
is its contract. ``meta`` may carry collector facts (mesh name, test id) and is not parsed.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from pathwatch.contract import timefmt
from pathwatch.contract.envelope import RawEnvelope

from . import registry
from .context import Context
from .errors import ParseError


def is_envelope(value: Any) -> bool:
    """An object with both ``format`` and ``payload`` is an envelope."""
    return isinstance(value, dict) and "format" in value and "payload" in value


def open_envelope(value: dict, *, as_dicts: bool = False) -> tuple[registry.Format, Any, Context]:
    """Validate an envelope against its contract and return its format, payload and parser context
    (``as_dicts``: see :class:`Context`)."""
    if _plainly_valid(value):
        get = value.get
        fmt_name, payload, source, destination, collected_at = (
            value["format"], value["payload"], get("source"), get("destination"), get("collected_at")
        )
    else:
        try:
            envelope = RawEnvelope.model_validate(value)
        except ValidationError as error:
            first = error.errors()[0]
            field = ".".join(str(part) for part in first["loc"][:1]) or None
            reason = "unknown envelope field" if first["type"] == "extra_forbidden" else first["msg"]
            raise ParseError(field, reason) from None
        fmt_name, payload, source, destination, collected_at = (
            envelope.format, envelope.payload, envelope.source, envelope.destination, envelope.collected_at
        )
    fmt = registry.get(fmt_name)
    if collected_at is not None:
        try:
            collected_at = timefmt.normalize(collected_at)
        except ValueError as error:
            raise ParseError("collected_at", f"not an RFC 3339 time with zone: {error}") from None
    return fmt, payload, Context(fmt.name, source, destination, collected_at, as_dicts)


_FIELDS = frozenset(RawEnvelope.model_fields)


def _plainly_valid(value: dict) -> bool:
    """True for an envelope that RawEnvelope accepts as it is (the usual case), told in about a quarter
    of pydantic's time; anything unusual (non-ASCII text, subclasses, errors) is left to pydantic.

    >>> _plainly_valid({"format": "ping", "source": "a", "payload": "PING"}), _plainly_valid({"format": "ping", "source": ""})
    (True, False)
    """
    if not _FIELDS.issuperset(value):
        return False
    get = value.get
    fmt, payload = get("format"), get("payload")
    if fmt.__class__ is not str or not fmt.isascii() or payload.__class__ not in (dict, list, str):
        return False
    for key in ("source", "destination", "collected_at"):
        text = get(key)
        if text is not None and (text.__class__ is not str or not text or not text.isascii()):
            return False
    meta = get("meta")
    return meta is None or meta.__class__ is dict
