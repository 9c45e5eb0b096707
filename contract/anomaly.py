"""The anomaly record as JSON: what detectors emit and storage, tickets and dashboards read.

The in-memory form is :class:`pathwatch.models.anomaly.Anomaly`; this pydantic type only fixes
the JSON contract (``schemas/anomaly.v2.schema.json``) and validates it at the edges.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from .records import Rfc3339

# 2 added ``incident_id`` (optional: a v1 record reads as its own incident).
ANOMALY_SCHEMA_VERSION = 2

AnomalyKind = Literal[
    "route_change", "diurnal_saturation", "rising_loss", "mtu_blackhole", "window_limited", "throughput_drop",
    "latency_shift", "loss_step", "clock_error", "unreachable", "no_data",
]


class AnomalyRecord(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(description="Deterministic UUID of the episode (kind, path, start): upsert on it.")
    kind: AnomalyKind
    source: str | None = Field(description="Sender of the measured traffic.")
    destination: str | None
    start: Rfc3339 = Field(description="When the condition began, as the detector estimates it.")
    detected_at: Rfc3339 = Field(description="Event time of the observation that opened the episode.")
    end: Rfc3339 | None = Field(description="When it ended; null while open.")
    severity: Literal["info", "warning", "major", "critical"]
    score: float = Field(ge=0.0, le=1.0, description="Detector confidence, 0 to 1.")
    summary: str = Field(min_length=1, description="One human sentence.")
    evidence: dict[str, Any] = Field(description="Numbers behind the verdict, per kind.")
    detector_version: str
    incident_id: str | None = Field(
        default=None,
        description="Id of the root anomaly of the problem this one belongs to (its own id when it is the root); "
                    "absent in v1 records, which read as their own incident.")
