"""The raw envelope collectors publish: ``{format, source, destination, collected_at, payload}``.

It is the replayable source of truth; ``pathwatch/contract/schemas/envelope.v1.schema.json``
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


def open_envelope(value: dict) -> tuple[registry.Format, Any, Context]:
    """Validate an envelope against its contract and return its format, payload and parser context."""
    try:
        envelope = RawEnvelope.model_validate(value)
    except ValidationError as error:
        first = error.errors()[0]
        field = ".".join(str(part) for part in first["loc"][:1]) or None
        reason = "unknown envelope field" if first["type"] == "extra_forbidden" else first["msg"]
        raise ParseError(field, reason) from None
    fmt = registry.get(envelope.format)
    collected_at = envelope.collected_at
    if collected_at is not None:
        try:
            collected_at = timefmt.normalize(collected_at)
        except ValueError as error:
            raise ParseError("collected_at", f"not an RFC 3339 time with zone: {error}") from None
    return fmt, envelope.payload, Context(fmt.name, envelope.source, envelope.destination, collected_at)
