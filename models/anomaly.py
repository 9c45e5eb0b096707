"""The anomaly record every detector emits, and its deterministic id.

An anomaly is one episode on one path: it opens once (``end`` is ``None``), may be re-emitted
with the same ``id`` when it grows (higher severity, more evidence), and closes once (``end``
set). Consumers upsert on ``id``; the last emission of an id is its current state.
``incident_id`` names the problem it belongs to: the id of the problem's root anomaly, its own
id until :mod:`pathwatch.models.incidents` joins it to another's.

>>> a = Anomaly.open("loss_step", "a", "b", start=0.0, detected_at=600.0, severity="warning",
...                  score=0.9, summary="Loss stepped from 0 to 0.5 %.", evidence={"loss_pct": 0.5})
>>> a.to_dict()["start"], a.to_dict()["end"], a.is_open, a.incident_id == a.id
('1970-01-01T00:00:00Z', None, True, True)
>>> Anomaly.from_dict(a.to_dict()) == a
True
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field, replace
from typing import Any, get_args

from pathwatch.contract.anomaly import AnomalyKind, AnomalyRecord
from pathwatch.contract.ids import PATHWATCH_NAMESPACE
from pathwatch.contract.timefmt import from_epoch, parse_rfc3339

# The anomaly kinds (in the order reports list them) and severities (least to most urgent),
# as the JSON contract fixes them.
KINDS: tuple[str, ...] = get_args(AnomalyKind)
SEVERITIES: tuple[str, ...] = get_args(AnomalyRecord.model_fields["severity"].annotation)

# Bumped whenever the detectors' output on a fixed input changes (tests/test_detector_version.py pins
# the output's digest to it), so stored anomalies say which logic made them and a restored
# streaming job rebuilds the monitors an older version made (PathMonitor.made_with).
DETECTOR_VERSION = "2.1.0"


def anomaly_id(kind: str, source: str | None, destination: str | None, start: float, family: int | None = None) -> str:
    """UUID5 over kind, path and start (Unix seconds, to the millisecond): one id per episode;
    an IPv6 path's (``family`` 6) apart from the same hosts' other path."""
    key = f"anomaly|{kind}|{source or ''}|{destination or ''}|{round(start * 1000)}"
    if family is not None:
        key += f"|ipv{family}"
    return str(uuid.uuid5(PATHWATCH_NAMESPACE, key))


def _said_for(family: int | None, summary: str, evidence: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """``summary`` and ``evidence`` saying the address family of an IPv6 path's anomaly (unchanged
    for the other path: ``family`` None).

    >>> _said_for(6, "Loss stepped.", {})
    ('IPv6: Loss stepped.', {'ip_version': 6})
    >>> _said_for(6, "IPv6: Loss stepped.", {"ip_version": 6})[0]
    'IPv6: Loss stepped.'
    """
    if family is None:
        return summary, evidence
    said = f"IPv{family}: "
    return (summary if summary.startswith(said) else said + summary), {**evidence, "ip_version": family}


@dataclass(frozen=True)
class Anomaly:
    """One anomaly episode on one path. Times are Unix seconds in memory, RFC 3339 in JSON."""

    id: str
    kind: str
    source: str | None
    destination: str | None
    start: float
    detected_at: float
    end: float | None
    severity: str
    score: float
    summary: str
    evidence: dict[str, Any] = field(default_factory=dict)
    detector_version: str = DETECTOR_VERSION
    # The root anomaly's id of the incident this one belongs to ("" in states pickled before
    # incidents existed: read as its own id).
    incident_id: str = ""

    @classmethod
    def open(
        cls,
        kind: str,
        source: str | None,
        destination: str | None,
        *,
        start: float,
        detected_at: float,
        severity: str,
        score: float,
        summary: str,
        evidence: dict[str, Any],
        family: int | None = None,
    ) -> Anomaly:
        """A new open episode; ``family`` 6 for a host pair's IPv6 path (its evidence says
        ``ip_version``, its summary begins "IPv6:")."""
        if kind not in KINDS:
            raise ValueError(f"kind: unknown anomaly kind {kind!r}")
        if severity not in SEVERITIES:
            raise ValueError(f"severity: unknown severity {severity!r}")
        aid = anomaly_id(kind, source, destination, start, family)
        summary, evidence = _said_for(family, summary, evidence)
        return cls(
            id=aid,
            kind=kind,
            source=source,
            destination=destination,
            start=start,
            detected_at=detected_at,
            end=None,
            severity=severity,
            score=round(float(score), 4),
            summary=summary,
            evidence=evidence,
            incident_id=aid,
        )

    @property
    def is_open(self) -> bool:
        return self.end is None

    @property
    def incident(self) -> str:
        """The incident's id: ``incident_id``, or the anomaly's own id where none was set."""
        return self.incident_id or self.id

    def in_incident(self, incident_id: str, evidence: dict[str, Any] | None = None) -> Anomaly:
        """The same state as a member of ``incident_id`` (with ``evidence`` in place of its own)."""
        return replace(self, incident_id=incident_id, evidence=self.evidence if evidence is None else evidence)

    def grown(self, *, severity: str, score: float, summary: str, evidence: dict[str, Any]) -> Anomaly:
        """The same episode with new severity, score, summary and evidence (an IPv6 path's keeps
        saying so)."""
        summary, evidence = _said_for(self.evidence.get("ip_version"), summary, evidence)
        return replace(self, severity=severity, score=round(float(score), 4), summary=summary, evidence=evidence)

    def closed(self, end: float, evidence: dict[str, Any] | None = None) -> Anomaly:
        """The same episode, ended at ``end`` (never before its start)."""
        merged = {**self.evidence, **(evidence or {})}
        return replace(self, end=max(end, self.start), evidence=merged)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "source": self.source,
            "destination": self.destination,
            "start": from_epoch(self.start),
            "detected_at": from_epoch(self.detected_at),
            "end": None if self.end is None else from_epoch(self.end),
            "severity": self.severity,
            "score": plain(self.score),
            "summary": self.summary,
            "evidence": plain(self.evidence),
            "detector_version": self.detector_version,
            "incident_id": self.incident,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Anomaly:
        def seconds(text: str | None) -> float | None:
            return None if text is None else parse_rfc3339(text).timestamp()

        return cls(
            id=data["id"],
            kind=data["kind"],
            source=data.get("source"),
            destination=data.get("destination"),
            start=seconds(data["start"]),
            detected_at=seconds(data["detected_at"]),
            end=seconds(data.get("end")),
            severity=data["severity"],
            score=float(data["score"]),
            summary=data["summary"],
            evidence=dict(data.get("evidence") or {}),
            detector_version=data.get("detector_version", DETECTOR_VERSION),
            incident_id=data.get("incident_id") or data["id"],
        )


def plain(value: Any) -> Any:
    """``value`` with numpy scalars as Python numbers and tuples as lists, so any JSON encoder takes it.

    >>> import numpy as np
    >>> plain({"a": np.float64(1.5), "b": (np.int64(2), None)})
    {'a': 1.5, 'b': [2, None]}
    """
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(item) for item in value]
    if type(value).__module__ == "numpy" and hasattr(value, "item"):
        return value.item()
    return value
