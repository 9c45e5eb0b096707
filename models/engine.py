"""Offline replay: every record through the per-path monitors in event-time order.

The same :class:`~pathwatch.models.monitor.PathMonitor` objects the streaming job keeps in keyed
state; the replay sorts each path's observations by time, feeds them, and finally advances
every path to the end of the data (the latest record time) so silences are judged exactly as
an event-time timer would judge them. The result is the last state of every anomaly id, each
a member of its incident (:mod:`pathwatch.models.incidents`, as the streaming job groups them).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from pathwatch.models.anomaly import KINDS, Anomaly
from pathwatch.models.config import DetectorConfig
from pathwatch.models.incidents import group
from pathwatch.models.monitor import PathMonitor
from pathwatch.models.observe import Observation, observe

PathKey = tuple[str | None, str | None]
_KIND_ORDER = {"trace": 0, "latency": 1, "throughput": 2}


@dataclass
class Replay:
    """What a replay produced: final anomalies plus counts that reconcile with the input."""

    anomalies: list[Anomaly] = field(default_factory=list)
    records: int = 0
    observed: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    paths: int = 0
    # Every candidate a named veto held back or dismissed (``PathMonitor.take_vetoed``), when asked for.
    vetoed: list[dict[str, Any]] = field(default_factory=list)


def observation_key(record: dict[str, Any], obs: Observation) -> tuple[float, int, str]:
    """The order observations reach a monitor: time, then traces before latency before throughput, then id."""
    return (obs.t, _KIND_ORDER.get(record["kind"], 9), record.get("id") or "")


def group_observations(records: Iterable[dict[str, Any]], skipped: dict[str, int]) -> dict[PathKey, list[tuple]]:
    """Observations per directed path, each as (t, kind rank, record id, observation), in that order.

    A record id seen before on the path (the same measurement delivered twice) is skipped.
    """
    by_path: dict[PathKey, list[tuple]] = defaultdict(list)
    seen: dict[PathKey, set[str]] = defaultdict(set)
    for record in records:
        if record.get("source") is None or record.get("destination") is None:
            skipped["no source or destination"] = skipped.get("no source or destination", 0) + 1
            continue
        obs = observe(record)
        if obs is None:
            skipped[f"kind {record.get('kind')!r}"] = skipped.get(f"kind {record.get('kind')!r}", 0) + 1
            continue
        key = (record["source"], record["destination"])
        order = observation_key(record, obs)
        if order[2] and order[2] in seen[key]:
            skipped["duplicate record id"] = skipped.get("duplicate record id", 0) + 1
            continue
        seen[key].add(order[2])
        by_path[key].append((*order, obs))
    for rows in by_path.values():
        rows.sort(key=lambda row: row[:3])
    return by_path


def run_path(monitor: PathMonitor, observations: Iterable[Observation], end: float | None,
             vetoed: list[dict[str, Any]] | None = None) -> dict[str, Anomaly]:
    """Feed time-ordered observations to ``monitor``, advance it to ``end``; the last state of each
    anomaly id. With a ``vetoed`` list, every vetoed candidate is added to it."""
    latest: dict[str, Anomaly] = {}
    for obs in observations:
        for anomaly in monitor.observe(obs):
            latest[anomaly.id] = anomaly
        if vetoed is not None:
            vetoed.extend(monitor.take_vetoed())
    if end is not None:
        for anomaly in monitor.advance(end):
            latest[anomaly.id] = anomaly
    return latest


def replay(
    records: Iterable[dict[str, Any]],
    config: DetectorConfig | None = None,
    *,
    until: float | None = None,
    progress: Callable[[int], None] | None = None,
    keep_vetoed: bool = False,
) -> Replay:
    """Run the detectors over canonical records (dicts); ``until`` defaults to the latest record
    time. ``keep_vetoed``: also keep every candidate a named veto held back (``Replay.vetoed``)."""
    result = Replay()
    config = config or DetectorConfig()
    counted = _Counting(records)
    by_path = group_observations(counted, result.skipped)
    result.records = counted.count
    end = until if until is not None else max((rows[-1][0] for rows in by_path.values()), default=0.0)
    latest: dict[str, Anomaly] = {}
    for (source, destination), rows in by_path.items():
        latest.update(run_path(PathMonitor(source, destination, config), (row[3] for row in rows), end,
                               result.vetoed if keep_vetoed else None))
        result.observed += len(rows)
        if progress is not None:
            progress(len(rows))
    result.paths = len(by_path)
    rank = {kind: i for i, kind in enumerate(KINDS)}
    ordered = sorted(latest.values(), key=lambda a: (a.start, rank[a.kind], a.source or "", a.destination or ""))
    result.anomalies = group(ordered, paths=by_path, params=config.incidents)
    return result


def replay_observations(source: str, destination: str, observations: Iterable[Observation],
                        config: DetectorConfig | None = None, until: float | None = None) -> list[Anomaly]:
    """One path's observations (any order) through a fresh monitor; the final anomaly states."""
    ordered = sorted(observations, key=lambda o: o.t)
    end = until if until is not None else (ordered[-1].t if ordered else None)
    latest = run_path(PathMonitor(source, destination, config), ordered, end)
    return sorted(latest.values(), key=lambda a: (a.start, a.kind))


class _Counting:
    def __init__(self, items: Iterable[dict[str, Any]]):
        self.items, self.count = items, 0

    def __iter__(self):
        for item in self.items:
            self.count += 1
            yield item
