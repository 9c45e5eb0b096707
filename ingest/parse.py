"""Parse items into canonical records: the one place raw input becomes the record contract.

Records are pydantic models; with ``as_dicts=True`` they are the JSON-ready dicts those models
would dump (``model_dump(mode="json")``), built by the lean path (:mod:`pathwatch.ingest.build`)
that the streaming normalise step and ``pathwatch parse`` take. Errors are the same either way.

>>> from pathwatch.ingest.reader import read_items
>>> item = next(read_items(b'{"format": "ping", "source": "a", "destination": "b", '
...     b'"collected_at": "2024-01-01T00:00:00Z", "payload": "PING b (10.0.0.2) 56(84) bytes of data.\\\\n"}'))
>>> parse_item(item).records
[]
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from . import registry
from .context import Context
from .envelope import is_envelope, open_envelope
from .errors import ParseError
from .reader import Item


@dataclass(frozen=True)
class Defaults:
    """Facts for bare (unwrapped) payloads: a forced format and the endpoints/time the file lacks.

    Envelopes carry their own and ignore these.
    """

    format: str | None = None
    source: str | None = None
    destination: str | None = None
    collected_at: str | None = None


@dataclass
class Outcome:
    """What one item gave: records (models, or dicts when parsed ``as_dicts``), or the error that
    rejected it, and the format it was read as."""

    item: Item
    format: str | None = None
    records: list = field(default_factory=list)
    error: ParseError | None = None


def resolve(
    value: Any, defaults: Defaults = Defaults(), *, as_dicts: bool = False
) -> tuple[registry.Format, Any, Context]:
    """(format, payload, context) of one decoded envelope or bare payload; raises ParseError."""
    if is_envelope(value):
        return open_envelope(value, as_dicts=as_dicts)
    fmt = registry.get(defaults.format) if defaults.format else registry.detect(value)
    return fmt, value, Context(fmt.name, defaults.source, defaults.destination, defaults.collected_at, as_dicts)


def parse_value(value: Any, defaults: Defaults = Defaults(), *, as_dicts: bool = False) -> tuple[str, list]:
    """(format name, records) for one decoded envelope or bare payload; raises ParseError."""
    fmt, payload, ctx = resolve(value, defaults, as_dicts=as_dicts)
    return fmt.name, registry.parse_payload(fmt, payload, ctx)


def parse_item(item: Item, defaults: Defaults = Defaults(), *, as_dicts: bool = False) -> Outcome:
    """Parse one item; never raises for bad input (the Outcome carries the error and, if known, the format).

    ``as_dicts``: records as JSON-ready dicts (the lean path) instead of models.
    """
    if item.error is not None:
        return Outcome(item, error=item.error)
    try:
        fmt, payload, ctx = resolve(item.value, defaults, as_dicts=as_dicts)
    except ParseError as error:
        return Outcome(item, error=error)
    try:
        return Outcome(item, fmt.name, registry.parse_payload(fmt, payload, ctx))
    except ParseError as error:
        return Outcome(item, fmt.name, error=error)
