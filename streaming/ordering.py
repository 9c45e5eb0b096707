"""Event-time ordering for the detectors: buffer a path's observations, release them in order.

The detect job keeps, per path, a :class:`~pathwatch.models.monitor.PathMonitor` and a buffer of
observations not yet released. Observations are released to the monitor in the offline replay's
order — (time, kind rank, record id) — up to a time no earlier observation of the path can still
arrive at; then the monitor is advanced to that time so silences fire exactly where the replay
fires them. These functions hold that logic without Flink so that it is tested alone and the job
stays a thin wrapper.

**When a path's observations are ready** (:meth:`PathState.ready_until`). A path is measured by
a few *streams*, one per (kind, tool), each a collector's schedule of one test after another.
Two facts bound the time of a stream's next record. Its schedule: a stream whose newest record
started at F, and whose records were never closer than G apart, sends nothing before
F + ``gap_share`` × G: 0.95 once G is the least of ``settled`` (8) intervals (a schedule's slip
shows in them), 0.5 before (a scheduler slips far less than half an interval). And
collection: a collector publishes a result when its test ends, so records reach the path in
the order they were collected; once a record collected at C has arrived, any stream's result
still to come is collected after about C − ``slack`` (300 s) and, as the stream's results come
at most L after their start (its longest time from start to collection seen), started after
C − ``slack`` − L. Collection times are trusted only while the newest one is within ``delay``
of the path's newest record, and a stream's L only while it is within ``delay``: an archive
fetched long after it was measured, or a collector's clock years ahead, leaves the schedule
bounds alone. The path's own watermark is the earliest of its streams' bounds: its
records up to it are judged at once, live, without waiting for the rest of the mesh (a
10-minute latency window is judged when it arrives). No stream holds its path back more than
``delay`` behind the path's newest record, and while a path's records span less than ``delay``
(a stream may not have shown itself yet) the path waits the whole ``delay``. The mesh-wide
watermark (newest record − delay) still releases every path, silent ones included. A record
older than what its path already released is late (accounted, not analysed): one published
more than ``slack`` after a newer one (an archiver's retry), a new test's first record, or the
first record after a test was scheduled more often (it teaches the stream its new interval).

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

import math
import pickle
from dataclasses import dataclass, field
from typing import Any

from pathwatch.models.anomaly import Anomaly
from pathwatch.models.config import DetectorConfig
from pathwatch.models.engine import observation_key
from pathwatch.models.monitor import PathMonitor
from pathwatch.models.observe import epoch, observe

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
    # Per stream (kind/tool): the newest observation time, the shortest interval between two of
    # its observations, the longest time from an observation's start to its collection; the
    # path's earliest and newest observation times and its newest collection time.
    frontiers: dict[str, float] = field(default_factory=dict)
    intervals: dict[str, float] = field(default_factory=dict)
    interval_counts: dict[str, int] = field(default_factory=dict)
    lags: dict[str, float] = field(default_factory=dict)
    first_time: float | None = None
    newest_time: float | None = None
    newest_collected: float | None = None

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Unpickle, states saved before the streams were tracked included (they start warming up)."""
        self.__dict__.update({"frontiers": {}, "intervals": {}, "interval_counts": {}, "lags": {},
                              "first_time": None, "newest_time": None, "newest_collected": None, **state})

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
        t = key[0]
        stream = f"{record.get('kind')}/{record.get('tool') or record.get('format')}"
        self._learn(stream, t, record.get("collected_at"))
        if self.released_until is not None and t <= self.released_until:
            return LATE
        self.pending.append((key, obs))
        self.pending_ids.add(key[2])
        if self.pending_earliest is None or t < self.pending_earliest:
            self.pending_earliest = t
        self.first_time = t if self.first_time is None else min(self.first_time, t)
        self.newest_time = t if self.newest_time is None else max(self.newest_time, t)
        return PENDING

    def _learn(self, stream: str, t: float, collected_at: str | None) -> None:
        """Move a stream's frontier to ``t``; learn its shortest interval and longest collection lag
        (late records teach them too)."""
        frontier = self.frontiers.get(stream)
        if frontier is not None and t != frontier:
            gap = abs(t - frontier)
            self.intervals[stream] = min(self.intervals.get(stream, gap), gap)
            self.interval_counts[stream] = self.interval_counts.get(stream, 0) + 1
        self.frontiers[stream] = t if frontier is None else max(frontier, t)
        if collected_at:
            collected = epoch(collected_at)
            self.lags[stream] = max(self.lags.get(stream, 0.0), collected - t)
            if self.newest_collected is None or collected > self.newest_collected:
                self.newest_collected = collected

    def ready_until(self, delay: float, gap_share: tuple[float, float] = (0.5, 0.95), settled: int = 8,
                    slack: float = 300.0) -> float | None:
        """The time up to which no earlier observation of this path can still arrive (see the module
        docstring): the earliest stream promise, no older than the newest record minus ``delay``.

        >>> state = PathState(PathMonitor("a", "b"))
        >>> trace = {"kind": "trace", "tool": "traceroute", "id": "t1", "time": "2024-01-01T00:00:00Z",
        ...          "reached": True, "hops": []}
        >>> lat = {"kind": "latency", "tool": "owamp", "id": "l1", "time": "2024-01-01T00:10:00Z", "one_way": True,
        ...        "packets_sent": 600, "packets_lost": 0, "delay_min_ms": 10.0}
        >>> [state.accept(trace), state.accept(lat)]
        ['pending', 'pending']
        >>> state.ready_until(900.0) - 1704067200.0      # warming up: newest minus the whole delay
        -300.0
        >>> _ = state.accept({**trace, "id": "t2", "time": "2024-01-01T00:20:00Z"})
        >>> state.ready_until(900.0) - 1704067200.0      # warm; latency has reached 00:10 (no interval yet)
        600.0
        >>> _ = state.accept({**lat, "id": "l2", "time": "2024-01-01T00:20:00Z",
        ...                   "collected_at": "2024-01-01T00:30:00Z"})
        >>> state.ready_until(900.0) - 1704067200.0      # both 10 minutes apart: nothing before 00:25
        1500.0
        >>> _ = state.accept({**trace, "id": "t3", "time": "2024-01-01T00:40:00Z",
        ...                   "collected_at": "2024-01-01T00:40:05Z"})
        >>> state.ready_until(900.0) - 1704067200.0      # collected at 00:40:05: latency from 00:25:05 on
        1505.0
        """
        if self.newest_time is None:
            return None
        floor = self.newest_time - delay
        if floor < self.first_time:
            return floor
        trusted = self.newest_collected is not None and self.newest_collected - self.newest_time <= delay
        bounds = []
        for stream, frontier in self.frontiers.items():
            share = gap_share[self.interval_counts.get(stream, 0) >= settled]
            bound = frontier + share * self.intervals.get(stream, 0.0)
            if trusted and self.lags.get(stream, math.inf) <= delay:
                bound = max(bound, self.newest_collected - slack - self.lags[stream])
            bounds.append(max(bound, floor))
        return min(bounds)

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


def restore_path_state(saved: bytes, endpoints: tuple[str | None, str | None],
                       config: DetectorConfig) -> tuple[PathState, list[Anomaly], str | None]:
    """A path's pickled state as the detect job restores it: (the state, the anomalies its retired
    monitor closed, why it could not be read — None when it could).

    A monitor that other detectors (``DETECTOR_VERSION``) or another configuration built is not
    patched: its open anomalies are closed (:meth:`PathMonitor.retire`) and the path's detectors
    are rebuilt from ``config``, the buffer and stream bookkeeping kept. A state these detectors
    cannot read at all starts afresh on ``endpoints``.
    """
    try:
        state = pickle.loads(saved)
    except Exception as error:   # (a layout these detectors cannot read: what it held is lost)
        return PathState(PathMonitor(*endpoints, config)), [], f"{type(error).__name__}: {error}"
    monitor = state.monitor
    if monitor.made_with(config):
        monitor.config = config     # (not saved with the path: its IPv6 path is built from it)
        return state, [], None
    retired = monitor.retire()
    state.monitor = PathMonitor(monitor.source, monitor.destination, config)
    return state, retired, None


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
