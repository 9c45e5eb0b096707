"""Incidents: one problem, one alarm. Groups anomalies that one cause explains and names the root.

Each detector sees one path, so one problem surfaces as several anomalies: a route change and
the latency shift it brings, a host gone dark and the no_data, unreachable and route changes on
every path to and from it, one clock read on every path of its host. This module joins them into
**incidents**: an incident is a connected group of anomalies under the relations below, and its
id is the id of its **root**, the anomaly that names the cause. Every anomaly carries
``incident_id`` (its own id when it stands alone); the root's evidence gains ``location``: the
element the incident is localised to and how sure (paths that share it and see the problem
against paths that share it and do not).

Two anomalies are related (the relations never join unrelated problems: members always share a
host or a named network element with a relative, and overlap it in time):

============================  ==============================================================
relation                      when
============================  ==============================================================
further step (same path)      one ``follows`` the other (its evidence names the other's id):
                              a latency shift that stepped on, or crossed its baseline
back again (same path)        the same kind opening within ``rejoin_s`` after the other closed:
                              the problem back soon after it cleared (one incident however long
                              it lasts)
consequence (same path)       one's kind is a known consequence of the other's
                              (:data:`CONSEQUENCES`) and their windows overlap (the cause's
                              widened by ``tolerance_s`` after its end: a route that reverts
                              shifts the delay back); a latency shift explains a throughput
                              drop only when the delay rose (a longer round trip, a lower rate). A diurnal saturation takes its daily
                              symptoms from ``adopt_before_s`` before its start, each no longer
                              than ``daily_episode_s`` (a busy afternoon, not a level shift).
consequence (reverse path)    the same two hosts the other way, by :data:`REVERSE_CONSEQUENCES`
                              (a route or delay change one way is in the reverse path's round
                              trips; a clock that moved shifts both one-way delays), overlapping
same element                  same kind on two paths naming the same hop (route change at the
                              same divergence hop, MTU drop at the same hop) or the same LAG
                              bundle (rising loss, same member count, into the same host),
                              overlapping in time
same host, same onset         same kind on two paths through one host, onsets within
                              ``onset_window_s``
host gone dark                no_data (its source's collector stopped) or unreachable (its
                              destination stopped answering) on one path, and no_data,
                              unreachable, route_change, loss_step or throughput_drop on another
                              path through that host, onsets within ``onset_window_s``
============================  ==============================================================

The root is the member whose kind explains the others (:data:`ROOT_ORDER`), then the earliest,
then the smallest id. Grouping depends only on the anomalies' current states, so the last
emission of every id is the same however the states arrived (stream or replay). A cause found
later adopts what it explains: :meth:`IncidentGrouper.add` returns every anomaly whose incident
(or, for a root, location) changed, to be emitted again (consumers upsert by id).

>>> from pathwatch.models.anomaly import Anomaly
>>> def make(kind, src, dst, start, end=None):
...     a = Anomaly.open(kind, src, dst, start=start, detected_at=start, severity="warning",
...                      score=0.5, summary=kind, evidence={})
...     return a if end is None else a.closed(end)
>>> shift = make("latency_shift", "a", "b", 1000.0)
>>> route = make("route_change", "a", "b", 990.0)
>>> grouped = {a.kind: a for a in group([shift, route])}
>>> grouped["latency_shift"].incident_id == route.id, grouped["route_change"].incident_id == route.id
(True, True)
>>> grouped["route_change"].evidence["location"]["element"]
'path:a>b'
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pathwatch.contract.keys import path_key
from pathwatch.models.anomaly import Anomaly
from pathwatch.models.params import Params

HOUR = 3600.0

# Cause kind -> anomaly kinds it brings on the same path (and so explains).
CONSEQUENCES: dict[str, frozenset[str]] = {
    "route_change": frozenset({"latency_shift", "throughput_drop"}),
    "mtu_blackhole": frozenset({"throughput_drop"}),
    "window_limited": frozenset({"throughput_drop"}),        # a smaller window is a lower rate
    "loss_step": frozenset({"throughput_drop"}),
    "rising_loss": frozenset({"throughput_drop", "loss_step"}),
    "diurnal_saturation": frozenset({"latency_shift", "throughput_drop", "loss_step"}),  # busy-hour symptoms
    "unreachable": frozenset({"no_data", "loss_step"}),      # probes to a dead path are all lost
    "clock_error": frozenset({"latency_shift"}),
    "latency_shift": frozenset({"throughput_drop"}),       # a longer round trip is a lower TCP rate
}

# Cause kind -> kinds it brings on the *reverse* path (the same two hosts the other way): a round
# trip crosses both directions, so a route or delay change one way lengthens the reverse path's
# RTT and slows its TCP flows (their ACKs come back along it); a clock that moved shifts the two
# one-way delays opposite ways.
REVERSE_CONSEQUENCES: dict[str, frozenset[str]] = {
    "route_change": frozenset({"latency_shift", "throughput_drop"}),
    "latency_shift": frozenset({"throughput_drop"}),
    "clock_error": frozenset({"latency_shift"}),
}

# Which member is the root, most causal first: a host gone dark explains what its paths show; a
# clock, an MTU drop or a route explains level changes; loss explains throughput.
ROOT_ORDER: tuple[str, ...] = (
    "no_data", "unreachable", "clock_error", "mtu_blackhole", "route_change", "diurnal_saturation",
    "rising_loss", "loss_step", "window_limited", "latency_shift", "throughput_drop",
)
_ROOT_RANK = {kind: i for i, kind in enumerate(ROOT_ORDER)}

_DARK_CONSEQUENCES = frozenset({"no_data", "unreachable", "route_change", "loss_step", "throughput_drop"})


@dataclass(frozen=True)
class IncidentParams(Params):
    """How far apart in time related anomalies may be.

    ``tolerance_s``: a consequence may outlast its cause by this much (a route that reverts
    shifts the delay back). ``onset_window_s``: paths hurt by one element start within this of
    each other (detectors date onsets to the measurement cadence: hourly traces, throughput every
    few hours). ``adopt_before_s`` / ``daily_episode_s``: a diurnal saturation's daily symptoms
    may precede its own start by this much, each lasting at most this long. ``rejoin_s``: the same
    kind on the same path opening within this after an episode of it closed is that problem back
    (a black hole that let two runs through, a loss that paused), not a new one. ``retain_s``: a
    closed anomaly is forgotten this long after its end (no relation reaches that far).
    """

    tolerance_s: float = HOUR
    onset_window_s: float = 3 * HOUR
    adopt_before_s: float = 2 * 24 * HOUR
    daily_episode_s: float = 20 * HOUR
    rejoin_s: float = 24 * HOUR
    retain_s: float = 7 * 24 * HOUR


def path_of(anomaly: Anomaly | Mapping[str, Any]) -> str:
    """:func:`path_key` of an anomaly or its dict."""
    if isinstance(anomaly, Anomaly):
        return path_key(anomaly.source, anomaly.destination)
    return path_key(anomaly.get("source"), anomaly.get("destination"))


def hosts_of(anomaly: Anomaly) -> tuple[str, ...]:
    """The path's named ends."""
    return tuple(h for h in (anomaly.source, anomaly.destination) if h)


def divergence_hop(evidence: Mapping[str, Any]) -> str | None:
    """The old route's hop at the divergence TTL, from a route change's evidence (None if unanswered).

    >>> divergence_hop({"divergence_ttl": 4, "old_hops": ["1.1.1.1", "2.2.2.2", "3.3.3.3"]})
    '2.2.2.2'
    """
    ttl, old = evidence.get("divergence_ttl"), evidence.get("old_hops")
    if not isinstance(ttl, int) or not isinstance(old, list) or ttl < 1:
        return None
    index = (ttl - 1) - max(ttl - 2, 0)   # old_hops starts two hops before the divergence TTL
    if 0 <= index < len(old) and isinstance(old[index], str) and old[index]:
        return old[index]
    return None


def named_element(kind: str, destination: str | None, evidence: Mapping[str, Any]) -> str | None:
    """The network element (not a host) an anomaly's own evidence names, if any: the hop a route
    left at its divergence, the hop where the MTU drops, a LAG bundle into the destination.

    >>> named_element("rising_loss", "b", {"lag_k_estimate": 6})
    'lag:k=6|to:b'
    >>> named_element("route_change", "b", {"divergence_ttl": 4, "old_hops": ["1.1.1.1", "2.2.2.2"]})
    'hop:2.2.2.2'
    """
    if kind == "route_change":
        hop = divergence_hop(evidence)
        return None if hop is None else f"hop:{hop}"
    if kind == "mtu_blackhole" and isinstance(evidence.get("mtu_drop_hop"), str):
        return f"hop:{evidence['mtu_drop_hop']}"
    if kind == "rising_loss" and isinstance(evidence.get("lag_k_estimate"), int) and destination:
        return f"lag:k={evidence['lag_k_estimate']}|to:{destination}"
    return None


def element_of(anomaly: Anomaly) -> str | None:
    """:func:`named_element` of an anomaly."""
    return named_element(anomaly.kind, anomaly.destination, anomaly.evidence)


def problem_keys(anomaly: Mapping[str, Any]) -> list[str]:
    """Keys of the problem an anomaly (a dict of the contract) may belong to, best first, for systems
    that file problems by key (tickets, Alertmanager): the element its evidence names, else the
    source host of a silence or either host of a clock, else the path.

    >>> problem_keys({"kind": "route_change", "source": "a", "destination": "b",
    ...               "evidence": {"divergence_ttl": 4, "old_hops": ["1.1.1.1", "2.2.2.2", "3.3.3.3"]}})
    ['route_change|hop:2.2.2.2']
    >>> problem_keys({"kind": "throughput_drop", "source": "a", "destination": "b", "evidence": {}})
    ['throughput_drop|path:a>b']
    >>> problem_keys({"kind": "clock_error", "source": "a", "destination": "b", "evidence": {}})
    ['clock_error|host:a', 'clock_error|host:b']
    >>> problem_keys({"kind": "latency_shift", "source": "a", "destination": "b", "evidence": {"ip_version": 6}})
    ['latency_shift|path:a>b|ipv6']
    """
    kind = anomaly["kind"]
    source, destination = anomaly.get("source"), anomaly.get("destination")
    element = named_element(kind, destination, anomaly.get("evidence") or {})
    if element is not None:
        return [f"{kind}|{element}"]
    if kind == "no_data" and source:
        return [f"{kind}|host:{source}"]
    if kind == "clock_error" and source and destination:
        return [f"{kind}|host:{source}", f"{kind}|host:{destination}"]
    family = (anomaly.get("evidence") or {}).get("ip_version")
    return [f"{kind}|path:{path_key(source, destination)}" + (f"|ipv{family}" if family else "")]


def _brings(cause: Anomaly, other: Anomaly, table: dict[str, frozenset[str]]) -> bool:
    """Whether ``cause`` is known to bring ``other`` by ``table`` (:data:`CONSEQUENCES` on its path,
    :data:`REVERSE_CONSEQUENCES` on the reverse): a delay shift slows TCP only when the delay rose."""
    if other.kind not in table.get(cause.kind, ()):
        return False
    return cause.kind != "latency_shift" or (cause.evidence.get("step_ms") or 0.0) > 0


def related_kinds(kind: str) -> frozenset[str]:
    """Kinds that explain ``kind`` on the same path, or that it explains.

    >>> sorted(related_kinds("latency_shift"))
    ['clock_error', 'diurnal_saturation', 'route_change', 'throughput_drop']
    """
    causes = {cause for cause, consequences in CONSEQUENCES.items() if kind in consequences}
    return frozenset(causes | set(CONSEQUENCES.get(kind, ())))


def _end(anomaly: Anomaly) -> float:
    return float("inf") if anomaly.end is None else anomaly.end


def _overlap(a: Anomaly, b: Anomaly, slack: float = 0.0) -> bool:
    return a.start <= _end(b) + slack and b.start <= _end(a) + slack


def related(a: Anomaly, b: Anomaly, params: IncidentParams) -> bool:
    """Whether one problem explains both ``a`` and ``b`` (the module's table)."""
    if a.id == b.id:
        return False
    # (a host pair's IPv6 path is a path of its own: its anomalies say ip_version 6)
    same_family = a.evidence.get("ip_version") == b.evidence.get("ip_version")
    same_path = same_family and a.source == b.source and a.destination == b.destination
    if same_path and (a.evidence.get("follows") == b.id or b.evidence.get("follows") == a.id):
        return True
    if same_path and a.kind == b.kind:
        first, later = (a, b) if a.start <= b.start else (b, a)
        if first.end is not None and later.start - first.end <= params.rejoin_s:
            return True     # the same problem back soon after it cleared
    if same_family and a.source == b.destination and a.destination == b.source and a.source != a.destination:
        # the reverse path: a delay change one way is in the other way's round trips
        for cause, other in ((a, b), (b, a)):
            if _brings(cause, other, REVERSE_CONSEQUENCES) and _overlap(cause, other, params.tolerance_s):
                return True
    if same_path:
        for cause, other in ((a, b), (b, a)):
            if not _brings(cause, other, CONSEQUENCES):
                continue
            if cause.kind == "diurnal_saturation":
                if _daily_symptom_of(cause, other, params):
                    return True
            elif _overlap(cause, other, params.tolerance_s):
                return True
    if a.kind == b.kind:
        element = element_of(a)
        if element is not None and element == element_of(b) and _overlap(a, b):
            return True
    shared = set(hosts_of(a)) & set(hosts_of(b))
    if not shared or same_path:
        return False
    near = abs(a.start - b.start) <= params.onset_window_s and _overlap(a, b)
    if not near:
        return False
    if a.kind == b.kind:
        return True
    return _dark_with(a, b) or _dark_with(b, a)


def dark_host(anomaly: Anomaly) -> str | None:
    """The host a silence points at: a no_data's source (its collector stopped), an unreachable's
    destination (it stopped answering); None for other kinds."""
    if anomaly.kind == "no_data":
        return anomaly.source
    if anomaly.kind == "unreachable":
        return anomaly.destination
    return None


def _dark_with(dark: Anomaly, other: Anomaly) -> bool:
    """``other`` is on a path through the host ``dark`` says went dark, of a kind a dark host brings."""
    host = dark_host(dark)
    return host is not None and other.kind in _DARK_CONSEQUENCES and host in hosts_of(other)


def _daily_symptom_of(diurnal: Anomaly, other: Anomaly, params: IncidentParams) -> bool:
    """``other`` is one busy period of ``diurnal``'s path: short, within its days (or just before them)."""
    if other.end is not None and other.end - other.start > params.daily_episode_s:
        return False
    return diurnal.start - params.adopt_before_s <= _end(other) and other.start <= _end(diurnal) + params.tolerance_s


def root_key(anomaly: Anomaly) -> tuple[int, float, str]:
    """Sort key whose smallest member is an incident's root."""
    return (_ROOT_RANK.get(anomaly.kind, len(ROOT_ORDER)), anomaly.start, anomaly.id)


def locate(members: list[Anomaly], paths: dict[str, set[str]]) -> dict[str, Any]:
    """Where an incident is: the element its members share, with the paths that share it and do not see it.

    ``paths`` maps a host to the known paths through it (``source>destination``). One path: the path.
    Members that name one hop or bundle: that element (the paths sharing it are not known here:
    ``paths_sharing`` is null). Else the host most of the affected paths go through.

    >>> a = Anomaly.open("no_data", "a", "b", start=0, detected_at=0, severity="warning", score=1, summary="s", evidence={})
    >>> c = Anomaly.open("no_data", "a", "c", start=0, detected_at=0, severity="warning", score=1, summary="s", evidence={})
    >>> loc = locate([a, c], {"a": {"a>b", "a>c", "a>d"}, "b": {"a>b"}, "c": {"a>c"}})
    >>> loc["element"], loc["paths_affected"], loc["paths_unaffected"]
    ('host:a', ['a>b', 'a>c'], ['a>d'])
    """
    affected = sorted({path_of(m) for m in members})
    if len(affected) == 1:
        return {"element": f"path:{affected[0]}", "scope": "path", "paths_affected": affected,
                "paths_sharing": affected, "paths_unaffected": []}
    elements = {element_of(m) for m in members}
    if len(elements) == 1 and None not in elements:
        element = elements.pop()
        return {"element": element, "scope": element.split(":", 1)[0], "paths_affected": affected,
                "paths_sharing": None, "paths_unaffected": None}
    counts: dict[str, int] = defaultdict(int)
    for path in affected:
        source, _, destination = path.partition(">")
        for host in {source, destination} - {""}:
            counts[host] += 1
    best = min(counts, key=lambda h: (-counts[h], -counts[h] / max(len(paths.get(h, ())), 1), h))
    sharing = sorted(paths.get(best, set()) | {p for p in affected if best in p.split(">")})
    return {"element": f"host:{best}", "scope": "host", "paths_affected": affected,
            "paths_sharing": sharing, "paths_unaffected": [p for p in sharing if p not in affected]}


class IncidentGrouper:
    """Incremental grouping: feed anomaly states as detectors emit them, emit what changed.

    The state is the latest detector state of every anomaly not yet forgotten, the known paths
    through each host, and what was last emitted per id. Picklable (Flink keeps it in state).
    """

    def __init__(self, params: IncidentParams | None = None):
        self.params = params or IncidentParams()
        self.states: dict[str, Anomaly] = {}           # id -> latest state from its detector
        self.by_host: dict[str, set[str]] = defaultdict(set)   # host or element -> anomaly ids
        self.paths: dict[str, set[str]] = defaultdict(set)     # host -> known paths through it
        self.emitted: dict[str, tuple[str, Any]] = {}  # id -> (incident id, location) last emitted

    def see_path(self, source: str | None, destination: str | None) -> None:
        """Record a path the mesh measures (its ends' paths are what a host-level location is judged against)."""
        path = path_key(source, destination)
        for host in (source, destination):
            if host:
                self.paths[host].add(path)

    def add(self, anomaly: Anomaly) -> list[Anomaly]:
        """Take one detector state; the states to emit: this one and every other whose incident changed."""
        old_incident = self.emitted.get(anomaly.id, (None,))[0]
        self._hold(anomaly)
        starts = {anomaly.id}
        if old_incident is not None:                  # its new state may have left others on their own (a split)
            starts |= {aid for aid, (incident, _) in self.emitted.items() if incident == old_incident}
        out: dict[str, Anomaly] = {}
        seen: set[str] = set()
        for start in sorted(starts):
            if start in seen:
                continue
            component = self._component(start)
            seen |= component
            for member in self._decorate(component):
                out[member.id] = member
        if anomaly.id not in out:
            out[anomaly.id] = self._current(anomaly)
        return sorted(out.values(), key=root_key)

    def forget(self, now: float) -> None:
        """Drop incidents whose every member closed more than ``retain_s`` before ``now`` (no new
        relation reaches them; a member still open keeps its whole incident, root included)."""
        horizon = now - self.params.retain_s
        old = {aid for aid, a in self.states.items() if a.end is not None and a.end < horizon}
        while old:
            component = self._component(next(iter(old)))
            old -= component
            if any(self.states[aid].end is None or self.states[aid].end >= horizon for aid in component):
                continue
            for aid in component:
                anomaly = self.states.pop(aid)
                self.emitted.pop(aid, None)
                for key in self._index_keys(anomaly):
                    self.by_host[key].discard(aid)
                    if not self.by_host[key]:
                        del self.by_host[key]

    def grouped(self) -> list[Anomaly]:
        """Every anomaly held, as a member of its incident."""
        out: dict[str, Anomaly] = {}
        for aid in sorted(self.states):
            if aid not in out:
                for member in self._decorate(self._component(aid), force=True):
                    out[member.id] = member
        return list(out.values())

    def _hold(self, anomaly: Anomaly) -> None:
        """Keep ``anomaly`` as its id's latest state, indexed by its hosts and element."""
        self.states[anomaly.id] = anomaly
        for key in self._index_keys(anomaly):
            self.by_host[key].add(anomaly.id)

    @staticmethod
    def _index_keys(anomaly: Anomaly) -> set[str]:
        keys = set(hosts_of(anomaly))
        element = element_of(anomaly)
        if element is not None:
            keys.add(element)
        return keys

    def _neighbours(self, anomaly: Anomaly) -> set[str]:
        """Held anomalies sharing a host or element with ``anomaly`` (an index entry may outlive a
        state whose evidence named another element: only held ids count)."""
        ids: set[str] = set()
        for key in self._index_keys(anomaly):
            ids |= self.by_host.get(key, set())
        ids.discard(anomaly.id)
        return {aid for aid in ids if aid in self.states}

    def _component(self, start: str) -> set[str]:
        """The ids connected to ``start`` by :func:`related`."""
        if start not in self.states:
            return set()
        component, todo = {start}, [start]
        while todo:
            current = self.states[todo.pop()]
            for other in sorted(self._neighbours(current) - component):
                if related(current, self.states[other], self.params):
                    component.add(other)
                    todo.append(other)
        return component

    def _decorate(self, component: set[str], force: bool = False) -> list[Anomaly]:
        """The component's members with the root's id, the root with its location; only changed ones unless ``force``."""
        members = sorted((self.states[aid] for aid in component), key=root_key)
        root = members[0]
        location = locate(members, self.paths)
        out = []
        for member in members:
            mark = (root.id, location if member is root else None)
            if force or self.emitted.get(member.id) != mark:
                out.append(self._mark(member, root.id, mark[1]))
        return out

    def _mark(self, member: Anomaly, incident_id: str, location: dict[str, Any] | None) -> Anomaly:
        self.emitted[member.id] = (incident_id, location)
        evidence = member.evidence if location is None else {**member.evidence, "location": location}
        return member.in_incident(incident_id, evidence)

    def _current(self, anomaly: Anomaly) -> Anomaly:
        incident_id, location = self.emitted.get(anomaly.id, (anomaly.id, None))
        return self._mark(anomaly, incident_id, location)


def group(anomalies: Iterable[Anomaly], paths: Iterable[tuple[str | None, str | None]] = (),
          params: IncidentParams | None = None) -> list[Anomaly]:
    """Final anomaly states (one per id) as members of their incidents, in the input's order.

    ``paths``: every (source, destination) the data measures, for host-level locations.
    """
    grouper = IncidentGrouper(params)
    for source, destination in paths:
        grouper.see_path(source, destination)
    anomalies = list(anomalies)
    for anomaly in anomalies:
        grouper._hold(anomaly)
    grouped = {a.id: a for a in grouper.grouped()}
    return [grouped[a.id] for a in anomalies]
