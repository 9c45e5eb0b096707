"""What every detector is: per-path state, fed observations in event-time order, emitting anomalies.

A detector instance watches one directed path. ``observe`` takes the next observation (already
in time order) and returns the anomalies it opened, grew or closed; ``deadline`` names the next
event time at which ``on_time`` must run even without data (the silence detector uses it), so a
Flink event-time timer and the offline replay call it at the same moments. Instances hold only
plain Python values and pickle, which is what Flink keyed state and checkpoints need.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from pathwatch.models.anomaly import SEVERITIES, Anomaly
from pathwatch.models.context import PathContext
from pathwatch.models.params import Params


class Detector:
    """Base class: subclasses set ``name``, ``kinds``, ``reads`` and ``Params`` and implement ``observe``.

    ``context`` is the path's :class:`~pathwatch.models.context.PathContext`: what a detector
    needs of the path beyond its own observations (busy hours, route moves, the black-hole
    judge) it reads there, never from another detector.
    """

    name: ClassVar[str]
    kinds: ClassVar[tuple[str, ...]]
    reads: ClassVar[tuple[type, ...]]
    Params: ClassVar[type[Params]]
    # True for detectors that act on time alone (they override deadline and on_time).
    timed: ClassVar[bool] = False

    def __init__(self, source: str | None, destination: str | None, params: Params | None = None,
                 context: PathContext | None = None):
        self.source = source
        self.destination = destination
        self.p = params if params is not None else self.Params()
        # The facts the path's detectors share (its monitor hands every detector the same one).
        self.context = context if context is not None else PathContext()
        self.episodes: dict[str, Anomaly] = {}

    # --- the interface the monitor calls -------------------------------------------------
    def observe(self, obs: Any) -> list[Anomaly]:
        raise NotImplementedError

    def handlers(self) -> dict[type, Callable[[Any], list[Anomaly]]]:
        """Methods that do what ``observe`` does for one observation type, so a monitor can skip the dispatch."""
        return {}

    def deadline(self) -> float | None:
        return None

    def on_time(self, now: float) -> list[Anomaly]:
        return []

    # --- episode bookkeeping shared by all detectors --------------------------------------
    def is_open(self, kind: str) -> bool:
        return kind in self.episodes

    def open(self, kind: str, *, start: float, at: float, severity: str, score: float, summary: str,
             evidence: dict[str, Any]) -> list[Anomaly]:
        """Open an episode of ``kind`` (no-op when one is open: anomalies do not re-fire)."""
        if kind in self.episodes:
            return []
        anomaly = Anomaly.open(kind, self.source, self.destination, start=start, detected_at=at,
                               severity=severity, score=score, summary=summary, evidence=evidence,
                               family=self.context.family)
        self.episodes[kind] = anomaly
        return [anomaly]

    def grow(self, kind: str, *, severity: str, score: float, summary: str, evidence: dict[str, Any]) -> list[Anomaly]:
        """Re-emit an open episode when its severity rises; otherwise keep quiet."""
        current = self.episodes.get(kind)
        if current is None or SEVERITIES.index(severity) <= SEVERITIES.index(current.severity):
            return []
        grown = current.grown(severity=severity, score=max(score, current.score), summary=summary, evidence=evidence)
        self.episodes[kind] = grown
        return [grown]

    def close(self, kind: str, end: float, evidence: dict[str, Any] | None = None) -> list[Anomaly]:
        current = self.episodes.pop(kind, None)
        return [] if current is None else [current.closed(end, evidence)]

    def open_episodes(self) -> list[Anomaly]:
        """The anomalies this detector holds open."""
        return list(self.episodes.values())

    def retire(self, end: float | None, why: str) -> list[Anomaly]:
        """Close every open anomaly at ``end`` (at its detection when None), saying ``why``."""
        return [closed for kind, open_ in list(self.episodes.items())
                for closed in self.close(kind, end if end is not None else open_.detected_at, {"ended": why})]


def severity_for(value: float, warning: float, major: float, critical: float) -> str:
    """Map a magnitude onto the severity ladder by three ascending thresholds.

    >>> severity_for(0.5, 0.3, 0.6, 0.9), severity_for(0.95, 0.3, 0.6, 0.9)
    ('warning', 'critical')
    """
    if value >= critical:
        return "critical"
    if value >= major:
        return "major"
    if value >= warning:
        return "warning"
    return "info"
