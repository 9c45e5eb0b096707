"""Event-time ordering for the detectors: buffer a path's observations, release them in order.

The detect job keeps, per path, a :class:`~pathwatch.models.monitor.PathMonitor` and a buffer of
observations not yet released. Observations are released to the monitor in the offline replay's
order — (time, kind rank, record id) — once the watermark minus the ordering delay has passed
them; then the monitor is advanced to that time so silences fire exactly where the replay fires
them. These functions hold that logic without Flink so that it is tested alone and the job stays
a thin wrapper.

>>> from pathwatch.models.monitor import PathMonitor
>>> state = PathState(PathMonitor("a", "b"))
>>> rec = {"kind": "latency", "id": "r1", "time": "2024-01-01T00:00:00Z", "one_way": True,
...        "packets_sent": 600, "packets_lost": 0, "delay_min_ms": 10.0}
>>> state.accept(rec), state.accept(rec)
('pending', 'duplicate')
>>> state.release(1704067200.0), state.pending, state.accept(rec)
([], [], 'duplicate')
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pathwatch.models.anomaly import Anomaly
from pathwatch.models.engine import observation_key
from pathwatch.models.monitor import PathMonitor
from pathwatch.models.observe import observe

PENDING, DUPLICATE, LATE, SKIPPED = "pending", "duplicate", "late", "skipped"
_RECENT_IDS = 64


@dataclass
class PathState:
    """One path's monitor, its buffer of (key, observation) and what was released last."""

    monitor: PathMonitor
    pending: list[tuple] = field(default_factory=list)
    released_until: float | None = None
    recent_ids: list[str] = field(default_factory=list)
    pending_ids: set[str] = field(default_factory=set)
    # The earliest time in the buffer, kept as entries come and go: the detect job asks for the
    # next wake-up after every record, and a scan of the buffer each time made a flood quadratic.
    pending_earliest: float | None = None

    def __getstate__(self) -> dict[str, Any]:
        """Pickled without the buffer: the detect job keeps that in its own list state."""
        return {**self.__dict__, "pending": [], "pending_ids": set(), "pending_earliest": None}

    def restore_pending(self, pending: list[tuple]) -> None:
        """Set the buffer (e.g. read back from Flink state), the ids it holds and its earliest time."""
        self.pending = pending
        self.pending_ids = {entry[0][2] for entry in pending}
        self.pending_earliest = min((entry[0][0] for entry in pending), default=None)

    def accept(self, record: dict[str, Any]) -> str:
        """Buffer one record's observation; says PENDING, DUPLICATE, LATE or SKIPPED (no observation)."""
        obs = observe(record)
        if obs is None:
            return SKIPPED
        key = observation_key(record, obs)
        if key[2] in self.pending_ids or key[2] in self.recent_ids:
            return DUPLICATE
        if self.released_until is not None and key[0] <= self.released_until:
            return LATE
        self.pending.append((key, obs))
        self.pending_ids.add(key[2])
        if self.pending_earliest is None or key[0] < self.pending_earliest:
            self.pending_earliest = key[0]
        return PENDING

    def earliest(self) -> float | None:
        """Time of the earliest buffered observation."""
        return self.pending_earliest if self.pending else None

    def release(self, until: float) -> list[Anomaly]:
        """Feed buffered observations with time <= ``until`` in order, then advance the monitor to ``until``."""
        ready = sorted((entry for entry in self.pending if entry[0][0] <= until), key=lambda entry: entry[0])
        self.restore_pending([entry for entry in self.pending if entry[0][0] > until])
        out: list[Anomaly] = []
        for key, obs in ready:
            out.extend(self.monitor.observe(obs))
            self.recent_ids.append(key[2])
        del self.recent_ids[:-_RECENT_IDS]
        out.extend(self.monitor.advance(until))
        self.released_until = until if self.released_until is None else max(self.released_until, until)
        return out

    def due(self, until: float) -> bool:
        """Whether :meth:`release` up to ``until`` would feed an observation or run a deadline."""
        wake = self.next_wakeup()
        return wake is not None and wake <= until

    def next_wakeup(self) -> float | None:
        """The earliest time at which :meth:`release` has something to do (an observation or a deadline)."""
        times = [t for t in (self.earliest(), self.monitor.deadline()) if t is not None]
        return min(times) if times else None


def states_to_emit(anomalies: list[Anomaly]) -> list[Anomaly]:
    """What to emit of one release: each anomaly id's first state and, when it changed later in the
    same release, its last one (in first-seen order). The states between are dropped, but an
    episode that opened and closed within one release (a replay of history moves the watermark by
    hours) still shows its opening: a ticket system opens a ticket on it and then resolves it,
    where the closed state alone would have opened nothing.

    >>> from pathwatch.models.anomaly import Anomaly
    >>> a = Anomaly.open("loss_step", "x", "y", start=0.0, detected_at=10.0, severity="warning", score=0.5,
    ...                  summary="Loss stepped.", evidence={})
    >>> b = Anomaly.open("no_data", "x", "y", start=5.0, detected_at=20.0, severity="info", score=0.1,
    ...                  summary="Silent.", evidence={})
    >>> worse = a.grown(severity="major", score=0.9, summary="More.", evidence={})
    >>> [(x.kind, x.end) for x in states_to_emit([a, b, worse, a.closed(99.0)])]
    [('loss_step', None), ('loss_step', 99.0), ('no_data', None)]
    """
    first: dict[str, Anomaly] = {}
    last: dict[str, Anomaly] = {}
    for anomaly in anomalies:
        first.setdefault(anomaly.id, anomaly)
        last[anomaly.id] = anomaly
    return [state for aid, opened in first.items()
            for state in ((opened,) if last[aid] is opened else (opened, last[aid]))]
