"""The raw envelope collectors publish: ``{format, source, destination, collected_at, payload}``.

It is the replayable source of truth; ``pathwatch/contract/schemas/envelope.v1.schema.json``
is its contract. ``meta`` may carry collector facts (mesh name, test id) and is not parsed.
"""

from __future__ import annotations

from typing import Any

from pathwatch.contract import timefmt

from . import registry
from .context import Context
from .errors import ParseError
from .fields import check

ENVELOPE_KEYS = frozenset({"format", "source", "destination", "collected_at", "payload", "meta"})


def is_envelope(value: Any) -> bool:
    """An object with both ``format`` and ``payload`` is an envelope."""
    return isinstance(value, dict) and "format" in value and "payload" in value


def open_envelope(value: dict) -> tuple[registry.Format, Any, Context]:
    """Validate an envelope and return its format, payload and parser context."""
    unknown = sorted(set(value) - ENVELOPE_KEYS)
    if unknown:
        raise ParseError(unknown[0], f"unknown envelope field; allowed: {', '.join(sorted(ENVELOPE_KEYS))}")
    fmt = registry.get(check(value["format"], str, "format"))
    endpoints = {}
    for key in ("source", "destination"):
        name = value.get(key)
        if name is not None and (not isinstance(name, str) or not name.strip()):
            raise ParseError(key, "must be a non-empty string when present")
        endpoints[key] = name
    collected_at = value.get("collected_at")
    if collected_at is not None:
        check(collected_at, str, "collected_at")
        try:
            collected_at = timefmt.normalize(collected_at)
        except ValueError as error:
            raise ParseError("collected_at", f"not an RFC 3339 time with zone: {error}") from None
    meta = value.get("meta")
    if meta is not None:
        check(meta, dict, "meta")
    ctx = Context(fmt.name, endpoints["source"], endpoints["destination"], collected_at)
    return fmt, value["payload"], ctx
