"""Incidents: anomalies one cause explains share the root's id; unrelated problems never do."""

from __future__ import annotations

import random

import numpy as np
import pytest

from pathwatch.models.anomaly import Anomaly
from pathwatch.models.engine import replay_observations
from pathwatch.models.incidents import IncidentGrouper, IncidentParams, group, related
from tests.detector_series import DAY, HOUR, T0, latency, trace


def make(kind, src, dst, start, end=None, evidence=None):
    a = Anomaly.open(kind, src, dst, start=start, detected_at=start + 600, severity="warning", score=0.5,
                     summary=f"{kind} on {src}>{dst}", evidence=evidence or {})
    return a if end is None else a.closed(end)


def incidents(anomalies):
    out = {}
    for a in anomalies:
        out.setdefault(a.incident_id, set()).add((a.kind, a.source, a.destination))
    return out


def test_consequences_on_a_path_join_their_cause():
    route = make("route_change", "a", "b", T0)
    shift = make("latency_shift", "a", "b", T0 + 600, T0 + 2 * DAY)
    loss = make("loss_step", "c", "d", T0)
    drop = make("throughput_drop", "c", "d", T0 + 4 * HOUR)
    grouped = {a.kind: a for a in group([shift, route, loss, drop])}
    assert grouped["latency_shift"].incident_id == grouped["route_change"].incident_id == route.id
    assert grouped["throughput_drop"].incident_id == grouped["loss_step"].incident_id == loss.id
    assert grouped["route_change"].evidence["location"]["element"] == "path:a>b"
    assert "location" not in grouped["latency_shift"].evidence


def test_unrelated_problems_stay_apart():
    p = IncidentParams()
    # same kind, no shared host
    assert not related(make("loss_step", "a", "b", T0), make("loss_step", "c", "d", T0), p)
    # same kind through one host, onsets two days apart
    assert not related(make("loss_step", "a", "b", T0), make("loss_step", "a", "c", T0 + 2 * DAY), p)
    # a consequence kind on the same path that ended before the cause began
    assert not related(make("route_change", "a", "b", T0 + 3 * DAY), make("latency_shift", "a", "b", T0, T0 + DAY), p)
    # a kind that is no consequence of the other, same path, same time
    assert not related(make("clock_error", "a", "b", T0), make("throughput_drop", "a", "b", T0), p)
    # a long level shift on a saturating path is not one of its busy afternoons
    assert not related(make("diurnal_saturation", "a", "b", T0), make("latency_shift", "a", "b", T0, T0 + 3 * DAY), p)


def test_a_clock_on_one_host_is_one_incident_across_its_paths():
    hosts = ["a", "b", "c", "d"]
    clock = [make("clock_error", s, d, T0 + i * 60) for i, (s, d) in
             enumerate((s, d) for s in hosts for d in hosts if s != d and "a" in (s, d))]
    other = make("clock_error", "b", "c", T0 + 5 * DAY, T0 + 6 * DAY)    # later, elsewhere: its own
    paths = [(s, d) for s in hosts for d in hosts if s != d]
    grouped = group([*clock, other], paths=paths)
    found = incidents(grouped)
    assert len(found) == 2
    root = next(a for a in grouped if a.id == a.incident_id and a.source != "b")
    assert root.evidence["location"]["element"] == "host:a"
    assert root.evidence["location"]["paths_unaffected"] == []


def test_diurnal_saturation_adopts_the_afternoons_before_it_was_named():
    grouper = IncidentGrouper()
    day1 = make("latency_shift", "a", "b", T0 + 14 * HOUR, T0 + 20 * HOUR)
    day1_loss = make("loss_step", "a", "b", T0 + 15 * HOUR, T0 + 19 * HOUR)
    first = grouper.add(day1) + grouper.add(day1_loss)
    assert {a.incident_id for a in first} == {day1.id, day1_loss.id}      # alone, for now
    diurnal = make("diurnal_saturation", "a", "b", T0 + DAY + 14 * HOUR)   # named on day 3, from day 2
    again = {a.id: a for a in grouper.add(diurnal)}
    assert set(again) == {day1.id, day1_loss.id, diurnal.id}              # the afternoons re-emitted
    assert {a.incident_id for a in again.values()} == {diurnal.id}


def test_a_state_that_no_longer_relates_leaves_its_incident():
    grouper = IncidentGrouper()
    route = make("route_change", "a", "b", T0 + DAY)
    shift = make("latency_shift", "a", "b", T0 + 2 * DAY)
    grouper.add(route)
    assert grouper.add(shift)[0].incident_id == route.id
    # the route change's episode is re-dated: it closed a day before the shift began
    moved = route.closed(T0 + DAY + HOUR)
    out = {a.id: a for a in grouper.add(moved)}
    assert out[shift.id].incident_id == shift.id


def _states(final: Anomaly, rng: random.Random) -> list[Anomaly]:
    """A plausible history of ``final``: opened, maybe grown, then its final state."""
    opened = Anomaly.open(final.kind, final.source, final.destination, start=final.start,
                          detected_at=final.detected_at, severity="info", score=0.1, summary=final.summary,
                          evidence={})
    history = [opened]
    if rng.random() < 0.5:
        history.append(opened.grown(severity="warning", score=0.4, summary=final.summary, evidence={"n": 1}))
    history.append(final)
    return history


@pytest.mark.parametrize("seed", range(8))
def test_streaming_order_gives_the_offline_incidents(seed):
    """Whatever order paths' states arrive in, the last emission of every id equals the offline grouping."""
    rng = random.Random(seed)
    hosts = ["a", "b", "c", "d", "e"]
    kinds = ["route_change", "latency_shift", "throughput_drop", "loss_step", "no_data", "unreachable",
             "clock_error", "diurnal_saturation", "rising_loss"]
    finals = []
    for _ in range(40):
        s, d = rng.sample(hosts, 2)
        start = T0 + rng.randrange(0, 10 * 24) * HOUR
        end = None if rng.random() < 0.3 else start + rng.choice([2, 6, 30, 80]) * HOUR
        a = make(rng.choice(kinds), s, d, start, end)
        finals.append(a)
    finals = list({a.id: a for a in finals}.values())
    histories = [_states(a, rng) for a in finals]
    # interleave the histories at random, each keeping its own order
    stream = []
    cursors = [0] * len(histories)
    while any(c < len(h) for c, h in zip(cursors, histories)):
        i = rng.choice([i for i, h in enumerate(histories) if cursors[i] < len(h)])
        stream.append(histories[i][cursors[i]])
        cursors[i] += 1
    grouper = IncidentGrouper()
    paths = [(s, d) for s in hosts for d in hosts if s != d]
    for s, d in paths:
        grouper.see_path(s, d)
    last: dict[str, Anomaly] = {}
    for state in stream:
        for emitted in grouper.add(state):
            last[emitted.id] = emitted
    offline = {a.id: a for a in group(finals, paths=paths)}
    assert last == offline
    assert len(set(a.incident_id for a in offline.values())) < len(offline)   # something was grouped


def test_a_host_gone_dark_is_one_incident():
    """Host h stops: its collector publishes nothing (no_data on every path from it) and nothing reaches it
    (traces to it stop short, one-way tests to it lose every packet). The real detectors, then the grouping."""
    rng = np.random.default_rng(3)
    others = ["a", "b", "c"]
    dark = T0 + 6 * DAY
    end = T0 + 8 * DAY
    anomalies = []
    for o in others:
        route = [f"10.{ord(o)}.0.1", "10.9.0.1", "10.9.0.2", "h"]
        # h -> o: measured from h, so nothing after it goes dark
        obs = [latency(t, 5.0 + rng.normal(0, 0.02)) for t in np.arange(T0, dark, 600.0)]
        obs += [trace(t, list(reversed(route[:-1])) + [o]) for t in np.arange(T0 + 60, dark, HOUR)]
        anomalies += replay_observations("h", o, obs, until=end)
        # o -> h: still measured from o, but h no longer answers
        obs = [latency(t, 5.0 + rng.normal(0, 0.02), lost=0 if t < dark else 6000)
               for t in np.arange(T0, end, 600.0)]
        obs += [trace(t, route if t < dark else route[:-1] + [None] * 3, reached=t < dark)
                for t in np.arange(T0 + 60, end, HOUR)]
        anomalies += replay_observations(o, "h", obs, until=end)
    assert len(anomalies) >= len(others) * 2      # every path says something
    paths = [(s, d) for s in [*others, "h"] for d in [*others, "h"] if s != d]
    grouped = group(anomalies, paths=paths)
    found = incidents(grouped)
    assert len(found) == 1, found
    root = next(a for a in grouped if a.id == a.incident_id)
    assert root.evidence["location"]["element"] == "host:h"
    assert root.evidence["location"]["paths_unaffected"] == []


def test_forgotten_anomalies_leave_no_trace_in_later_grouping():
    grouper = IncidentGrouper(IncidentParams(retain_s=DAY))
    # a route change re-dated to another divergence hop keeps an index entry under the old hop
    first = make("route_change", "a", "b", T0, evidence={"divergence_ttl": 2, "old_hops": ["10.0.0.1", "10.0.0.2"]})
    grouper.add(first)
    grouper.add(first.closed(T0 + HOUR).grown(severity="warning", score=0.5, summary="s",
                                               evidence={"divergence_ttl": 2, "old_hops": ["10.0.0.1", "10.0.0.9"]}))
    grouper.forget(T0 + 3 * DAY)
    assert first.id not in grouper.states
    later = make("route_change", "c", "d", T0 + 3 * DAY, evidence={"divergence_ttl": 2, "old_hops": ["10.0.0.1", "10.0.0.2"]})
    assert [a.incident_id for a in grouper.add(later)] == [later.id]


def test_a_dark_host_takes_only_what_happens_on_its_own_paths():
    """A silence names one host (a no_data's source, an unreachable's destination): problems on other
    paths of the far end that began about then are not the outage's."""
    p = IncidentParams()
    dark = make("no_data", "gatech", "bnl", T0)
    assert related(dark, make("unreachable", "cern", "gatech", T0 + 600), p)      # through gatech
    assert not related(dark, make("loss_step", "bnl", "cern", T0 + 80 * 60), p)   # bnl's own problem
    assert not related(make("no_data", "cnaf", "nikhef", T0), make("unreachable", "nikhef", "umd", T0 + 600), p)


def test_an_incident_is_forgotten_whole_only_once_all_its_members_are_old():
    grouper = IncidentGrouper(IncidentParams(retain_s=DAY))
    route = make("route_change", "a", "b", T0, T0 + 2 * HOUR)
    shift = make("latency_shift", "a", "b", T0 + 600)
    grouper.add(route)
    grouper.add(shift)
    grouper.forget(T0 + 8 * DAY)          # the route change closed a week ago, its shift is still open
    grown = shift.grown(severity="major", score=0.9, summary="more", evidence={})
    assert [a.incident_id for a in grouper.add(grown)] == [route.id]
    assert {a.id: a.incident_id for a in group([route, grown])}[shift.id] == route.id
    grouper.add(grown.closed(T0 + 2 * DAY))
    grouper.forget(T0 + 8 * DAY)
    assert grouper.states == {}


def test_a_throughput_drop_hours_after_a_rise_in_delay_joins_it_on_its_path_and_the_reverse():
    """The delay rose 12 ms on a→b; 19 hours later the runs on a→b and on b→a (whose round trips
    cross a→b) are slower: one problem. A fall in delay explains no drop; a loss step on a→b
    explains none on b→a (ACK loss barely slows a flow)."""
    params = IncidentParams()
    rise = make("latency_shift", "a", "b", T0, evidence={"step_ms": 12.0})
    drop_here = make("throughput_drop", "a", "b", T0 + 19 * HOUR)
    drop_back = make("throughput_drop", "b", "a", T0 + 19 * HOUR)
    assert related(rise, drop_here, params) and related(drop_back, rise, params)
    fall = make("latency_shift", "a", "b", T0, evidence={"step_ms": -12.0})
    assert not related(fall, drop_here, params) and not related(fall, drop_back, params)
    loss = make("loss_step", "a", "b", T0)
    assert related(loss, drop_here, params) and not related(loss, drop_back, params)
    grouped = {(a.kind, a.source): a for a in group([drop_back, rise, drop_here])}
    assert {a.incident_id for a in grouped.values()} == {rise.id}


def test_a_route_change_one_way_explains_the_reverse_paths_delay_shift():
    params = IncidentParams()
    route = make("route_change", "a", "b", T0)
    assert related(route, make("latency_shift", "b", "a", T0 + 1200, evidence={"step_ms": 8.0}), params)
    over = make("route_change", "a", "b", T0, end=T0 + HOUR)
    assert not related(over, make("latency_shift", "b", "a", T0 + 3 * DAY, evidence={"step_ms": 8.0}), params)


def test_a_problem_back_within_a_day_of_clearing_is_the_same_incident():
    """A black hole that let two clean runs through and came back 6 hours later: one incident;
    back 3 days later: a new one."""
    params = IncidentParams()
    first = make("mtu_blackhole", "a", "b", T0, end=T0 + 5 * DAY)
    assert related(first, make("mtu_blackhole", "a", "b", T0 + 5 * DAY + 6 * HOUR), params)
    assert not related(first, make("mtu_blackhole", "a", "b", T0 + 8 * DAY), params)
    assert not related(first, make("loss_step", "a", "b", T0 + 5 * DAY + 6 * HOUR), params)
