"""no_data: a path whose measurements stop arriving beyond their own cadence.

Each measurement type keeps its recent inter-arrival gaps; its cadence is their median. When
nothing of a type arrives for ``misses`` cadences (and at least ``min_slack_s`` past one
cadence), an event-time deadline fires and the path opens ``no_data`` from the moment the next
result was due. The next arrival of every overdue type closes it.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from statistics import median

from pathwatch.contract.timefmt import from_epoch
from pathwatch.models.anomaly import Anomaly
from pathwatch.models.base import Detector, Params
from pathwatch.models.observe import LatencyObs, ThroughputObs, TraceObs

_NAMES = {ThroughputObs: "throughput", LatencyObs: "latency", TraceObs: "trace"}


@dataclass(frozen=True)
class SilenceParams(Params):
    misses: float = 3.0          # cadences without a result before the path counts as silent
    min_slack_s: float = 1800.0  # and at least this long past the first missed result
    min_gaps: int = 3            # gaps seen before a cadence is trusted
    history: int = 12            # gaps kept per measurement type
    max_cadence_s: float = 86400.0  # results rarer than this have no cadence to miss


class _Cadence:
    __slots__ = ("last", "gaps", "_period")

    def __init__(self, history: int):
        self.last: float | None = None
        self.gaps: deque[float] = deque(maxlen=history)
        self._period: float | None = None

    def add_gap(self, gap: float) -> None:
        self.gaps.append(gap)
        self._period = None

    def period(self, min_gaps: int) -> float | None:
        if len(self.gaps) < min_gaps:
            return None
        if self._period is None:
            self._period = median(self.gaps)
        return self._period


class SilenceDetector(Detector):
    name = "silence"
    kinds = ("no_data",)
    reads = (ThroughputObs, LatencyObs, TraceObs)
    Params = SilenceParams
    timed = True

    def __init__(self, source, destination, params=None):
        super().__init__(source, destination, params)
        self.cadences: dict[str, _Cadence] = {}
        self.overdue: set[str] = set()
        self._deadline: float | None = None
        self._stale = False

    def _due(self, kind: str) -> float | None:
        cadence = self.cadences[kind]
        period = cadence.period(self.p.min_gaps)
        if period is None or period > self.p.max_cadence_s or cadence.last is None or kind in self.overdue:
            return None
        return cadence.last + max(self.p.misses * period, period + self.p.min_slack_s)

    def deadline(self) -> float | None:
        if self._stale:
            times = [t for t in map(self._due, self.cadences) if t is not None]
            self._deadline, self._stale = (min(times) if times else None), False
        return self._deadline

    def on_time(self, now: float) -> list[Anomaly]:
        newly = [kind for kind in self.cadences if (due := self._due(kind)) is not None and due <= now]
        self.overdue.update(newly)
        self._stale = True
        if not newly or self.is_open("no_data"):
            return []
        kinds = sorted(self.overdue)
        expected = min(self.cadences[k].last + self.cadences[k].period(self.p.min_gaps) for k in kinds)
        last_seen = max(self.cadences[k].last for k in kinds)
        evidence = {
            "silent_types": kinds,
            "last_seen": {k: from_epoch(self.cadences[k].last) for k in kinds},
            "cadence_s": {k: round(self.cadences[k].period(self.p.min_gaps), 1) for k in kinds},
        }
        return self.open(
            "no_data", start=expected, at=now, severity="warning", score=1.0,
            summary=f"No {', '.join(kinds)} results since {from_epoch(last_seen)} "
                    f"(expected every {_human(min(evidence['cadence_s'].values()))}).",
            evidence=evidence,
        )

    def observe(self, obs) -> list[Anomaly]:
        kind = _NAMES[type(obs)]
        self._stale = True
        cadence = self.cadences.get(kind)
        if cadence is None:
            cadence = self.cadences[kind] = _Cadence(self.p.history)
        out: list[Anomaly] = []
        if kind in self.overdue:
            self.overdue.discard(kind)
            if not self.overdue:
                out = self.close("no_data", obs.t, {"resumed_at": from_epoch(obs.t)})
        elif cadence.last is not None and obs.t > cadence.last:
            cadence.add_gap(obs.t - cadence.last)
        if cadence.last is None or obs.t > cadence.last:
            cadence.last = obs.t
        return out


def _human(seconds: float) -> str:
    """``90`` → '90 s', ``5400`` → '1.5 h'."""
    if seconds >= 3600:
        return f"{seconds / 3600:.3g} h"
    if seconds >= 60:
        return f"{seconds / 60:.3g} min"
    return f"{seconds:.3g} s"
