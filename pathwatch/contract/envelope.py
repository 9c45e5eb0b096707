"""The raw envelope: one tool output as produced, plus who measured what and when.

``{"format": F, "source": host, "destination": host, "collected_at": RFC3339, "payload": P}``
— the replayable source of truth that collectors publish and offline commands read.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class RawEnvelope(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    format: str = Field(description="Input format name, see `pathwatch formats`.")
    source: str | None = Field(None, min_length=1, description="Test source (client) as the collector names it.")
    destination: str | None = Field(None, min_length=1, description="Test destination (server).")
    collected_at: str | None = Field(None, description="RFC 3339 time the collector wrapped the output.")
    payload: dict[str, Any] | list[Any] | str = Field(description="The tool's own output: a JSON value or its text.")
    meta: dict[str, Any] | None = Field(None, description="Collector facts (mesh, test id); not parsed.")
