"""All detectors for one directed path, behind one object: what a Flink keyed function holds.

>>> m = PathMonitor("a", "b")
>>> m.observe_record({"kind": "latency", "time": "2024-01-01T00:00:00Z", "one_way": True,
...                   "packets_sent": 600, "packets_lost": 0, "delay_min_ms": 10.0})
[]
"""

from __future__ import annotations

from typing import Any

from pathwatch.models.anomaly import Anomaly
from pathwatch.models.base import Detector
from pathwatch.models.config import DetectorConfig
from pathwatch.models.observe import Observation, observe


class PathMonitor:
    """Feeds each observation to the detectors that read its type; settles due deadlines first."""

    def __init__(self, source: str | None, destination: str | None, config: DetectorConfig | None = None):
        config = config or DetectorConfig()
        self.source = source
        self.destination = destination
        self.detectors: list[Detector] = config.build(source, destination)
        self.timed = [d for d in self.detectors if d.timed]
        # Detectors by the observation type they read, so each observation visits only its readers.
        self.readers: dict[type, list[Detector]] = {}
        self.last_t: float | None = None

    def observe_record(self, record: dict[str, Any]) -> list[Anomaly]:
        obs = observe(record)
        return [] if obs is None else self.observe(obs)

    def observe(self, obs: Observation) -> list[Anomaly]:
        out = self.advance(obs.t, inclusive=False) if self.timed else []
        readers = self.readers.get(type(obs))
        if readers is None:
            readers = self.readers[type(obs)] = [d for d in self.detectors if isinstance(obs, d.reads)]
        for detector in readers:
            out.extend(detector.observe(obs))
        self.last_t = obs.t if self.last_t is None else max(self.last_t, obs.t)
        return out

    def deadline(self) -> float | None:
        """The earliest time at which some detector must run without data (a timer to set)."""
        times = [t for t in (d.deadline() for d in self.timed) if t is not None]
        return min(times) if times else None

    def advance(self, now: float, *, inclusive: bool = True) -> list[Anomaly]:
        """Run every deadline up to ``now`` (before it, when not ``inclusive``), in time order."""
        out: list[Anomaly] = []
        while True:
            due = self.deadline()
            if due is None or due > now or (due == now and not inclusive):
                return out
            for detector in self.timed:
                if detector.deadline() == due:
                    out.extend(detector.on_time(due))

    def open_anomalies(self) -> list[Anomaly]:
        return [a for d in self.detectors for a in d.episodes.values()]
