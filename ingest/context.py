"""What a parser knows besides the payload: the envelope's endpoints and collection time."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Context:
    """Envelope facts handed to a parser.

    ``source``/``destination`` name the test's endpoints as it was run (client → server, as
    pscheduler names them); parsers fall back to what the payload says when they are None.
    ``collected_at`` (RFC 3339 UTC) is the fallback test time for payloads that carry none.
    ``as_dicts`` asks :func:`pathwatch.ingest.build.record` for JSON-ready dicts instead of
    record models (the lean path: the same checks, no model objects).
    """

    format: str
    source: str | None = None
    destination: str | None = None
    collected_at: str | None = None
    as_dicts: bool = False

    def endpoint(self, envelope_value: str | None, payload_value: str | None) -> str | None:
        """The envelope's name for an endpoint when it gives one, else the payload's."""
        return envelope_value if envelope_value else payload_value
