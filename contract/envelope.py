"""The raw envelope: one tool output as produced, plus who measured what and when.

``{"format": F, "source": host, "destination": host, "collected_at": RFC3339, "payload": P}``
— the replayable source of truth that collectors publish and offline commands read.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema, field_validator

# The payload is the tool's own output, checked for its JSON type only (never copied or coerced).
_PAYLOAD_SCHEMA = {"anyOf": [{"type": "object"}, {"type": "array"}, {"type": "string"}]}


class RawEnvelope(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    format: str = Field(description="Input format name, see `pathwatch formats`.")
    source: str | None = Field(None, min_length=1, description="Test source (client) as the collector names it.")
    destination: str | None = Field(None, min_length=1, description="Test destination (server).")
    collected_at: str | None = Field(None, description="RFC 3339 time the collector wrapped the output.")
    payload: Annotated[Any, WithJsonSchema(_PAYLOAD_SCHEMA)] = Field(
        description="The tool's own output: a JSON value or its text."
    )
    meta: Annotated[Any, WithJsonSchema({"anyOf": [{"type": "object"}, {"type": "null"}]})] = Field(
        None, description="Collector facts (mesh, test id); not parsed."
    )

    @field_validator("payload")
    @classmethod
    def _payload_is_json_output(cls, value: Any) -> Any:
        if not isinstance(value, (dict, list, str)):
            raise ValueError(f"must be a JSON object, array or string of tool output, got {type(value).__name__}")
        return value

    @field_validator("meta")
    @classmethod
    def _meta_is_an_object(cls, value: Any) -> Any:
        if value is not None and not isinstance(value, dict):
            raise ValueError(f"must be a JSON object, got {type(value).__name__}")
        return value
