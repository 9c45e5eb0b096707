"""All detectors for one directed path, behind one object: what a Flink keyed function holds.

A host pair measured over IPv4 and IPv6 has two paths: different routes, different delays
(often tens of milliseconds apart), different MTUs. Mixed into one series, a shift on one family
hides among the other's samples and the alternation itself looks like changes. So a monitor
keeps a second monitor for the pair's IPv6 measurements (records with ``ip_version`` 6), built
on first use; its anomalies carry ``ip_version`` 6 in their evidence, begin "IPv6:" and have ids
of their own. IPv4 results and those that do not say their family share the first.

>>> m = PathMonitor("a", "b")
>>> m.observe_record({"kind": "latency", "time": "2024-01-01T00:00:00Z", "one_way": True,
...                   "packets_sent": 600, "packets_lost": 0, "delay_min_ms": 10.0})
[]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pathwatch.models.anomaly import DETECTOR_VERSION, Anomaly
from pathwatch.models.base import Detector
from pathwatch.models.config import DetectorConfig
from pathwatch.models.context import PathContext
from pathwatch.models.observe import Observation, observe


class PathMonitor:
    """Feeds each observation to the detectors that read its type; settles due deadlines first."""

    def __init__(self, source: str | None, destination: str | None, config: DetectorConfig | None = None,
                 family: int | None = None):
        config = config or DetectorConfig()
        self.source = source
        self.destination = destination
        self.config = config
        self.family = family                # 6: this is a host pair's IPv6 path
        self.v6: PathMonitor | None = None  # the pair's IPv6 path, once one of its results came
        # The detectors' version and the configuration's digest this monitor was built with: a
        # saved monitor made by others is rebuilt, not patched (see ``made_with``).
        self.made_by = (DETECTOR_VERSION, config.digest)
        self.context = PathContext(config.context, family)     # what the path's detectors share
        self.detectors: list[Detector] = config.build(source, destination, self.context)
        self.timed = [d for d in self.detectors if d.timed]
        self.last_t: float | None = None
        # Per observation type, the timed detectors' deadline methods and the detector methods
        # that read it (a cache of bound methods, not pickled).
        self.calls: dict[type, tuple[list[Callable], list[Callable]]] = {}

    def __getstate__(self) -> dict[str, Any]:
        # (the configuration is the job's, not the path's: kept out of every path's saved state;
        # :func:`pathwatch.streaming.ordering.restore_path_state` hands it back)
        return {key: value for key, value in self.__dict__.items() if key not in ("calls", "config")}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.calls = {}
        self.config = None

    def observe_record(self, record: dict[str, Any]) -> list[Anomaly]:
        obs = observe(record)
        return [] if obs is None else self.observe(obs)

    def observe(self, obs: Observation) -> list[Anomaly]:
        t = obs.t
        if obs.v6 and self.family is None:
            # the pair's IPv6 path: its own monitor (this one's deadlines run up to the result first)
            if self.v6 is None:
                # (a monitor unpickled without its configuration handed back builds it from the defaults)
                self.v6 = PathMonitor(self.source, self.destination, self.config, family=6)
            out = self._advance_own(t, inclusive=False) + self.v6.observe(obs)
            if self.last_t is None or t > self.last_t:
                self.last_t = t
            return out
        out = [] if self.v6 is None else self.v6.advance(t, inclusive=False)
        cached = self.calls.get(type(obs))
        if cached is None:
            cached = self.calls[type(obs)] = self._calls_for(obs)
        deadlines, calls = cached
        for deadline in deadlines:
            due = deadline()
            if due is not None and due < t:       # (advance's own test, without its call)
                out += self._advance_own(t, inclusive=False)
                break
        for call in calls:
            found = call(obs)
            if found:
                out.extend(found)
        last_t = self.last_t
        if last_t is None or t > last_t:
            self.last_t = t
        return out

    def _calls_for(self, obs: Observation) -> tuple[list[Callable[[], float | None]], list[Callable[[Observation], list[Anomaly]]]]:
        """What to call for an observation of this type: the timed detectors' ``deadline`` (asked
        first: is one due before it?), then each reader's handler for it, else its ``observe``."""
        kind = type(obs)
        return ([d.deadline for d in self.timed],
                [d.handlers().get(kind, d.observe) for d in self.detectors if isinstance(obs, d.reads)])

    def deadline(self) -> float | None:
        """The earliest time at which some detector must run without data (a timer to set)."""
        earliest = self._own_deadline()
        if self.v6 is not None:
            t = self.v6.deadline()
            if t is not None and (earliest is None or t < earliest):
                earliest = t
        return earliest

    def _own_deadline(self) -> float | None:
        earliest = None
        for detector in self.timed:
            t = detector.deadline()
            if t is not None and (earliest is None or t < earliest):
                earliest = t
        return earliest

    def advance(self, now: float, *, inclusive: bool = True) -> list[Anomaly]:
        """Run every deadline up to ``now`` (before it, when not ``inclusive``), in time order
        (this path's, then its IPv6 path's)."""
        out = self._advance_own(now, inclusive=inclusive)
        if self.v6 is not None:
            out += self.v6.advance(now, inclusive=inclusive)
        return out

    def _advance_own(self, now: float, *, inclusive: bool = True) -> list[Anomaly]:
        out: list[Anomaly] = []
        while True:
            due = self._own_deadline()
            if due is None or due > now or (due == now and not inclusive):
                return out
            for detector in self.timed:
                if detector.deadline() == due:
                    out.extend(detector.on_time(due))

    def made_with(self, config: DetectorConfig) -> bool:
        """Whether this monitor was built by these detectors (``DETECTOR_VERSION``) with ``config``:
        a restored monitor that was not is rebuilt from the configuration (:meth:`retire` first)."""
        return getattr(self, "made_by", None) == (DETECTOR_VERSION, config.digest)

    def retire(self, why: str = "the detectors were rebuilt: their version or configuration changed") -> list[Anomaly]:
        """Close every open anomaly at the last observation's time (this monitor is being replaced)."""
        out = [closed for d in self.detectors for closed in d.retire(self.last_t, why)]
        return out if self.v6 is None else out + self.v6.retire(why)

    def vetoed(self) -> list[dict[str, Any]]:
        """The candidates the path's detectors held back or dismissed lately, and by which named
        veto (the latency detector's :data:`~pathwatch.models.detectors.latency.VETOES`), oldest first:
        why a change did not alarm."""
        mine = [v if self.family is None else {**v, "ip_version": self.family}
                for d in self.detectors for v in getattr(d, "vetoed", ())]
        return sorted(mine + ([] if self.v6 is None else self.v6.vetoed()), key=lambda v: v["at"])

    def take_vetoed(self) -> list[dict[str, Any]]:
        """:meth:`vetoed`, each with the path's ``source`` and ``destination``, and forget them (a
        replay that keeps every veto takes them after each observation)."""
        out = [{"source": self.source, "destination": self.destination, **v} for v in self.vetoed()]
        for monitor in (self, self.v6):
            for detector in monitor.detectors if monitor is not None else ():
                kept = getattr(detector, "vetoed", None)
                if kept:
                    kept.clear()
        return out

    def open_anomalies(self) -> list[Anomaly]:
        mine = [a for d in self.detectors for a in d.open_episodes()]
        return mine if self.v6 is None else mine + self.v6.open_anomalies()
