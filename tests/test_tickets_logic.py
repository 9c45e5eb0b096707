"""Tickets: keys, body, policy and the reconciler's state machine (through the in-memory backend of
tests/tickets_memory.py; the real systems are in test_tickets_rt.py)."""

from __future__ import annotations

import doctest
import importlib
import json

import pytest

from pathwatch.models import incidents as keys
from pathwatch.tickets import body, policy, reconcile
from pathwatch.tickets.backends.base import BackendUnavailable
from tests.tickets_memory import MemoryBackend
from tests.tickets_stream import DAY, HOP, HOUR, T0, loss_step, route_change, scenario


def test_docstring_examples_of_the_tickets_package():
    attempted = 0
    for name in ("body", "policy", "reconcile", "service", "alertmanager", "backends.base", "backends.webhook",
                 "backends.rt"):
        module = importlib.import_module(f"pathwatch.tickets.{name}")
        result = doctest.testmod(module)
        assert result.failed == 0, name
        attempted += result.attempted
    assert attempted >= 8


# --- keys ---------------------------------------------------------------------------------------
def test_route_changes_through_the_same_old_hop_share_a_key_and_other_hops_do_not():
    a, b = route_change("x", "y", T0).to_dict(), route_change("p", "q", T0 + 60).to_dict()
    c = route_change("x", "y", T0, hop="10.9.9.9").to_dict()
    assert keys.problem_keys(a) == keys.problem_keys(b) == [f"route_change|hop:{HOP}"]
    assert keys.problem_keys(c) == ["route_change|hop:10.9.9.9"]


def test_a_route_change_diverging_at_the_first_hop_and_an_unanswered_hop():
    assert keys.divergence_hop({"divergence_ttl": 1, "old_hops": ["10.0.0.1", "10.0.0.2"]}) == "10.0.0.1"
    a = route_change("x", "y", T0).to_dict()
    a["evidence"]["old_hops"][1] = None
    assert keys.problem_keys(a) == ["route_change|path:x>y"]


def test_mtu_lag_and_no_data_keys_name_the_shared_element():
    mtu = {"kind": "mtu_blackhole", "source": "a", "destination": "b", "evidence": {"mtu_drop_hop": "10.1.1.1"}}
    lag = {"kind": "rising_loss", "source": "a", "destination": "b", "evidence": {"lag_k_estimate": 4}}
    ramp = {"kind": "rising_loss", "source": "a", "destination": "b", "evidence": {"loss_pct": 0.1}}
    silent = {"kind": "no_data", "source": "a", "destination": "b", "evidence": {}}
    assert keys.problem_keys(mtu) == ["mtu_blackhole|hop:10.1.1.1"]
    assert keys.problem_keys(lag) == ["rising_loss|lag:k=4|to:b"]
    assert keys.problem_keys(ramp) == ["rising_loss|path:a>b"]
    assert keys.problem_keys(silent) == ["no_data|host:a"]


# --- body ---------------------------------------------------------------------------------------
def test_the_body_says_what_where_since_evidence_hypothesis_and_links_the_path_explorer():
    a = route_change("ps1.x.example", "ps1.y.example", T0).to_dict()
    text = body.body(a, keys.problem_keys(a)[0], "http://superset:8088")
    assert f"What: {a['summary']}" in text
    assert "Where: ps1.x.example → ps1.y.example" in text
    assert f"old hops from TTL 3: 90.147.1.149 {HOP} 62.40.3.167 62.40.2.84" in text
    assert "Since: 2026-01-01T00:00:00Z" in text
    assert "  rtt_step_ms: 3.4" in text
    assert f"Hypothesis: Traffic no longer goes through {HOP} at hop 4" in text
    link = [line for line in text.splitlines() if line.startswith("Path explorer: ")][0].split(": ", 1)[1]
    assert link.startswith("http://superset:8088/superset/dashboard/path-explorer/?native_filters=")
    from urllib.parse import parse_qs, urlsplit
    filters = parse_qs(urlsplit(link).query)["native_filters"][0]
    assert filters == ("(NATIVE_FILTER-path:(extraFormData:(filters:!((col:path,op:IN,val:!('ps1.x.example → ps1.y.example')))),"
                       "filterState:(value:!('ps1.x.example → ps1.y.example')),id:NATIVE_FILTER-path,ownState:()))")


def test_the_mtu_hypothesis_names_the_hop_and_both_mtus():
    a = {"kind": "mtu_blackhole", "evidence": {"path_mtu_before": 9000, "path_mtu_now": 1500, "mtu_drop_ttl": 12,
                                               "mtu_drop_hop": "10.1.1.1", "silent_after_drop": False}}
    assert body.hypothesis(a) == "MTU mismatch at hop 12 (10.1.1.1): pmtu 1500 on a 9000-byte path."


def test_rison_quotes_what_needs_it():
    assert body.rison("it's!") == "'it!'s!!'"
    assert body.rison([]) == "!()" and body.rison({}) == "()" and body.rison(None) == "!n"


# --- policy -------------------------------------------------------------------------------------
def test_policy_file_errors_name_the_field(tmp_path):
    bad = tmp_path / "policy.yaml"
    bad.write_text("priorities: {major: high}\n")
    with pytest.raises(policy.PolicyError, match=r"policy.yaml, field priorities.major: "):
        policy.load(bad)
    bad.write_text("quiet: [{knd: x}]\n")
    with pytest.raises(policy.PolicyError, match=r"field quiet.0.knd: Extra inputs"):
        policy.load(bad)


def test_quiet_rules_match_kind_and_site_until_their_end(tmp_path):
    file = tmp_path / "p.yaml"
    file.write_text("quiet: [{kind: loss_step, site: a.example, until: '2026-01-02T00:00:00Z'}]\n")
    rules = policy.load(file)
    a = loss_step(T0, source="ps1.a.example").to_dict()
    assert rules.quiet_for(a, T0) and not rules.quiet_for(a, T0 + DAY)
    assert not rules.quiet_for(loss_step(T0, source="ps1.c.example", destination="ps1.d.example").to_dict(), T0)


# --- the reconciler -----------------------------------------------------------------------------
def _run(steps, reconciler):
    return [reconciler.handle(step.anomaly) for step in steps]


def test_the_scenario_yields_exactly_the_expected_tickets_comments_and_statuses():
    backend = MemoryBackend()
    steps = scenario()
    outcomes = _run(steps, reconcile.Reconciler(backend, clock=lambda: T0))
    assert [o.action for o in outcomes] == [s.action for s in steps]
    assert len(backend.store) == 3
    loss, route, later = (backend.store[n] for n in ("1", "2", "3"))
    assert loss["status"] == "resolved" and route["status"] == "resolved" and later["status"] == "open"
    assert loss["key"] == later["key"] == "loss_step|path:ps1.a.example>ps1.b.example"
    assert route["key"] == f"route_change|hop:{HOP}"
    assert len(route["state"].members) == 10 and route["state"].open_members == {}
    assert [a for a, n in backend.calls if n == "1"] == ["create", "comment", "resolve", "reopen", "resolve"]
    assert [a for a, n in backend.calls if n == "2"] == ["create"] + ["comment"] * 18 + ["resolve"]
    assert loss["priority"] == 30     # reopened by a warning
    assert "Also on ps1.s1.example → ps1.far.example (now 2 paths)." in route["texts"][1]
    assert route["texts"][9].startswith("Also on ps1.s9.example → ps1.far.example (now 10 paths).")
    assert route["texts"][10].startswith("Recovered on ps1.s0.example → ps1.far.example")
    assert "still affected: 9 path(s)" in route["texts"][10]
    assert "all 10 path(s) are clear" in route["texts"][-1]


def test_replaying_the_stream_on_a_restarted_reconciler_changes_nothing():
    backend = MemoryBackend()
    steps = scenario()
    _run(steps, reconcile.Reconciler(backend))
    calls = list(backend.calls)
    outcomes = _run(steps, reconcile.Reconciler(backend))   # a restart from the first offset
    assert backend.calls == calls
    assert {o.action for o in outcomes} <= {"skip", "update"}
    assert len(backend.store) == 3


def test_restart_mid_stream_continues_without_duplicates():
    steps = scenario()
    whole = MemoryBackend()
    _run(steps, reconcile.Reconciler(whole))
    backend = MemoryBackend()
    _run(steps[:12], reconcile.Reconciler(backend))
    _run(steps[9:], reconcile.Reconciler(backend))   # restarted, re-reading three messages
    assert backend.calls == whole.calls
    assert {n: (t["status"], t["state"]) for n, t in backend.store.items()} == \
           {n: (t["status"], t["state"]) for n, t in whole.store.items()}


@pytest.mark.parametrize("when", ["before", "after"])
def test_a_failed_call_is_retried_without_losing_or_repeating_it(when):
    steps = scenario()
    whole = MemoryBackend()
    _run(steps, reconcile.Reconciler(whole))
    backend = MemoryBackend()
    reconciler = reconcile.Reconciler(backend)
    for index, step in enumerate(steps):
        if index in (0, 1, 3, 4, 8, 20):
            backend.fail_next = when
            with pytest.raises(BackendUnavailable):
                reconciler.handle(step.anomaly)
        reconciler.handle(step.anomaly)   # the retry
    assert backend.calls == whole.calls
    assert [t["status"] for t in backend.store.values()] == ["resolved", "resolved", "open"]


def test_quiet_mode_opens_nothing_but_still_resolves(tmp_path):
    file = tmp_path / "p.yaml"
    file.write_text("quiet: [{kind: route_change}]\n")
    backend = MemoryBackend()
    reconciler = reconcile.Reconciler(backend, policy.load(file))
    outcome = reconciler.handle(route_change("x", "y", T0).to_dict())
    assert outcome.action == "skip" and outcome.detail == "quiet mode" and backend.store == {}
    # A ticket opened before the quiet rule: new paths update silently, the end resolves it.
    loud = reconcile.Reconciler(backend)
    first, second = route_change("a", "b", T0), route_change("c", "d", T0 + 60)
    loud.handle(first.to_dict())
    quiet = reconcile.Reconciler(backend, policy.load(file))
    assert quiet.handle(second.to_dict()).action == "update"
    assert quiet.handle(first.closed(T0 + HOUR).to_dict()).action == "update"
    assert quiet.handle(second.closed(T0 + HOUR).to_dict()).action == "resolve"
    assert [a for a, _ in backend.calls] == ["create", "update", "update", "resolve"]


def test_rate_limit_per_kind_and_site(tmp_path):
    file = tmp_path / "p.yaml"
    file.write_text("rate_limit: {max_new: 2, per_s: 600}\n")
    backend = MemoryBackend()
    now = [T0]
    reconciler = reconcile.Reconciler(backend, policy.load(file), clock=lambda: now[0])
    paths = [("ps1.a.example", f"ps1.d{i}.example") for i in range(3)]
    actions = [reconciler.handle(loss_step(T0, source=s, destination=d).to_dict()).action for s, d in paths]
    assert actions == ["create", "create", "skip"]
    other_site = reconciler.handle(loss_step(T0, source="ps1.z.example", destination="ps1.d0.example").to_dict())
    assert other_site.action == "create"
    now[0] += 601   # the window has passed: the held-back problem gets its ticket on its next state
    assert reconciler.handle(loss_step(T0, severity="major", source=paths[2][0], destination=paths[2][1]).to_dict()).action == "create"


def test_below_min_severity_and_closed_unknown_anomalies_open_nothing():
    backend = MemoryBackend()
    reconciler = reconcile.Reconciler(backend)
    assert reconciler.handle(loss_step(T0, severity="info").to_dict()).action == "skip"
    assert reconciler.handle(loss_step(T0).closed(T0 + HOUR).to_dict()).action == "skip"
    assert backend.store == {}


def test_growing_raises_the_priority():
    backend = MemoryBackend()
    reconciler = reconcile.Reconciler(backend)
    for step in scenario()[:2]:
        reconciler.handle(step.anomaly)
    assert backend.store["1"]["priority"] == 60


def test_priority_follows_severity_and_beyond_the_reopen_window_is_a_new_ticket():
    backend = MemoryBackend()
    reconciler = reconcile.Reconciler(backend)
    first = loss_step(T0, severity="critical")
    reconciler.handle(first.to_dict())
    assert backend.store["1"]["priority"] == 90
    reconciler.handle(first.closed(T0 + HOUR).to_dict())
    assert reconciler.handle(loss_step(T0 + HOUR + DAY + 1).to_dict()).action == "create"
    assert backend.store["2"]["priority"] == 30


def test_clock_errors_of_one_host_join_one_ticket_from_either_end():
    backend = MemoryBackend()
    reconciler = reconcile.Reconciler(backend)
    def clock(source, destination, start):
        return Anomaly.open("clock_error", source, destination, start=start, detected_at=start, severity="major",
                            score=1.0, summary="Clock trouble.", evidence={}).to_dict()
    from pathwatch.models.anomaly import Anomaly
    actions = [reconciler.handle(clock(s, d, T0)).action
               for s, d in [("cern", "bnl"), ("bnl", "cern"), ("cern", "desy"), ("uw", "cern")]]
    assert actions == ["create", "comment", "comment", "comment"]
    assert len(backend.store) == 1 and backend.store["1"]["key"] == "clock_error|host:cern"


def test_the_handler_retries_until_the_backend_answers_and_stops_when_told():
    import threading

    from pathwatch.tickets.service import Handler, Interrupted, Retry

    backend = MemoryBackend()
    reconciler = reconcile.Reconciler(backend)
    waits: list[float] = []
    handler = Handler(reconciler, dead_letters=lambda letter: None, retry=Retry(first=0.5, longest=2.0),
                      sleep=waits.append)
    failures = iter([True, True, True, True])
    original = backend._apply

    def flaky(action, number, change):
        if next(failures, False):
            raise BackendUnavailable("memory: down")
        return original(action, number, change)

    backend._apply = flaky
    handled = handler.handle(json.dumps(scenario()[0].anomaly).encode())
    assert handled.outcome.action == "create" and handled.attempts == 5
    assert waits == [0.5, 1.0, 2.0, 2.0]
    stopping = threading.Event()
    stopping.set()
    backend._apply = lambda *args: (_ for _ in ()).throw(BackendUnavailable("memory: down"))
    stopped = Handler(reconcile.Reconciler(backend), dead_letters=lambda letter: None, stopping=stopping, sleep=waits.append)
    with pytest.raises(Interrupted, match="stopped while retrying"):
        stopped.handle(json.dumps(scenario()[1].anomaly).encode())


def test_a_permanent_refusal_is_a_dead_letter():
    from pathwatch.tickets.backends.base import BackendError
    from pathwatch.tickets.service import Handler

    backend = MemoryBackend()
    backend._apply = lambda *args: (_ for _ in ()).throw(BackendError("memory: 400 no such queue"))
    letters: list = []
    handled = Handler(reconcile.Reconciler(backend), dead_letters=letters.append).handle(
        json.dumps(scenario()[0].anomaly).encode(), "pathwatch.anomalies", 0, 7)
    assert handled.outcome is None and letters[0]["stage"] == "tickets"
    assert "refused" in letters[0]["reason"] and "400 no such queue" in letters[0]["reason"]


def test_a_consequence_on_the_same_path_joins_the_cause_and_is_found_again_after_a_restart():
    from pathwatch.models.anomaly import Anomaly

    backend = MemoryBackend()
    route = route_change("ps1.x.example", "ps1.y.example", T0)
    shift = Anomaly.open("latency_shift", "ps1.x.example", "ps1.y.example", start=T0 + 60, detected_at=T0 + 600,
                         severity="major", score=0.8, summary="Delay +3.4 ms.", evidence={"step_ms": 3.4})
    elsewhere = Anomaly.open("latency_shift", "ps1.p.example", "ps1.q.example", start=T0 + 60, detected_at=T0 + 600,
                             severity="major", score=0.8, summary="Delay +3.4 ms.", evidence={"step_ms": 3.4})
    first = reconcile.Reconciler(backend)
    assert first.handle(route.to_dict()).action == "create"
    joined = first.handle(shift.to_dict())
    assert (joined.action, joined.detail, joined.key) == ("comment", "related", f"route_change|hop:{HOP}")
    assert backend.store["1"]["texts"][-1].startswith(
        "Related on ps1.x.example → ps1.y.example: latency shift, a known consequence of this route change.")
    assert first.handle(elsewhere.to_dict()).action == "create"   # another path: its own ticket
    restarted = reconcile.Reconciler(backend)
    assert restarted.handle(route.closed(T0 + HOUR).to_dict()).action == "comment"   # the shift is still open
    assert restarted.handle(shift.closed(T0 + HOUR).to_dict()).action == "resolve"
    assert backend.store["1"]["status"] == "resolved" and len(backend.store) == 2


def test_a_host_problem_first_seen_from_the_other_end_is_re_keyed_to_the_shared_host():
    from pathwatch.models.anomaly import Anomaly

    def clock(source, destination):
        return Anomaly.open("clock_error", source, destination, start=T0, detected_at=T0, severity="major",
                            score=1.0, summary="Clock trouble.", evidence={})

    backend = MemoryBackend()
    reconciler = reconcile.Reconciler(backend)
    anomalies = [clock("umd", "ucl"), clock("nikhef", "ucl"), clock("ucl", "bnl"), clock("cern", "ucl")]
    outcomes = [reconciler.handle(a.to_dict()) for a in anomalies]
    assert [o.action for o in outcomes] == ["create", "comment", "comment", "comment"]
    assert [o.key for o in outcomes] == ["clock_error|host:umd"] + ["clock_error|host:ucl"] * 3
    assert len(backend.store) == 1 and backend.store["1"]["key"] == "clock_error|host:ucl"
    restarted = reconcile.Reconciler(backend)
    closing = [restarted.handle(a.closed(T0 + HOUR).to_dict()).action for a in anomalies]
    assert closing == ["comment", "comment", "comment", "resolve"]
    assert {o.action for o in (reconcile.Reconciler(backend).handle(a.to_dict()) for a in anomalies)} == {"skip"}


def test_a_cause_seen_after_its_consequence_joins_the_consequence_ticket():
    from pathwatch.models.anomaly import Anomaly

    backend = MemoryBackend()
    reconciler = reconcile.Reconciler(backend)
    drop = Anomaly.open("throughput_drop", "a", "b", start=T0, detected_at=T0, severity="major", score=0.8,
                        summary="Throughput dropped 45 %.", evidence={"drop_pct": 45})
    step = loss_step(T0 + 60, source="a", destination="b")
    assert reconciler.handle(drop.to_dict()).action == "create"
    joined = reconciler.handle(step.to_dict())
    assert (joined.action, joined.detail) == ("comment", "related") and len(backend.store) == 1
    assert backend.store["1"]["texts"][-1].startswith("Related on a → b: loss step, a likely cause of this throughput drop.")


def test_a_step_that_becomes_a_rising_loss_stays_one_ticket():
    """The loss detector names a failing member's first flat hours a step, then a rising loss from
    the step's start; every state it emits, in order, keeps one ticket: the rise joins the step's
    ticket as its cause, and the step closing leaves it open while the rise lasts."""
    import numpy as np

    from pathwatch.models.monitor import PathMonitor
    from tests.detector_series import DAY, latency, latency_times
    from tests.detector_series import T0 as SERIES_T0

    onset = SERIES_T0 + 4 * DAY + 34 * 60
    rate = lambda t: 1.4e-5 if t < onset else 1.3e-4 + 3e-3 * ((t - onset) / (8 * DAY)) ** 1.5  # noqa: E731
    rng = np.random.default_rng(0)
    monitor, emitted = PathMonitor("a", "b"), []
    for t in latency_times(10):
        emitted += monitor.observe(latency(t, 20.0, lost=int(rng.binomial(6000, rate(t)))))
    assert [(a.kind, a.end is None) for a in emitted][:3] == [("loss_step", True), ("rising_loss", True), ("loss_step", False)]
    backend = MemoryBackend()
    reconciler = reconcile.Reconciler(backend)
    actions = [reconciler.handle(a.to_dict()).action for a in emitted]
    assert actions[:3] == ["create", "comment", "comment"], actions
    assert len(backend.store) == 1 and backend.store["1"]["status"] != "resolved"
    assert "rising loss, a likely cause of this loss step" in backend.store["1"]["texts"][1]
    assert backend.store["1"]["texts"][2].startswith("On a → b the loss step became a rising loss at ")


def test_an_incident_is_one_ticket_whatever_kinds_and_paths_it_spans():
    """A host gone dark: no_data on its paths, unreachable and route changes on the paths to it. Each
    kind has its own problem key; grouped into one incident by the models' grouper, they are one ticket,
    and an afternoon a diurnal saturation adopts after it ended is recorded on that one's ticket."""
    from pathwatch.models.anomaly import Anomaly
    from pathwatch.models.incidents import IncidentGrouper

    def make(kind, source, destination, start, end=None):
        a = Anomaly.open(kind, source, destination, start=start, detected_at=start + 900, severity="major",
                         score=0.9, summary=f"{kind}.", evidence={})
        return a if end is None else a.closed(end)

    grouper, backend = IncidentGrouper(), MemoryBackend()
    reconciler = reconcile.Reconciler(backend)
    dark = [make("no_data", "h", "a", T0), make("unreachable", "a", "h", T0 + 600),
            make("route_change", "b", "h", T0 + 1200), make("no_data", "h", "b", T0 + 300)]
    for anomaly in dark:
        for state in grouper.add(anomaly):
            reconciler.handle(state.to_dict())
    assert len(backend.store) == 1
    assert len(backend.store["1"]["state"].members) == 4
    for anomaly in dark:
        for state in grouper.add(anomaly.closed(T0 + DAY)):
            reconciler.handle(state.to_dict())
    assert [t["status"] for t in backend.store.values()] == ["resolved"]

    afternoon = make("latency_shift", "c", "d", T0 + 14 * HOUR, T0 + 19 * HOUR)
    diurnal = make("diurnal_saturation", "c", "d", T0 + DAY + 14 * HOUR)
    for anomaly in (afternoon, diurnal):
        for state in grouper.add(anomaly):
            reconciler.handle(state.to_dict())
    assert len(backend.store) == 2      # the afternoon closed before it had a ticket; the saturation has one
    assert set(backend.store["2"]["state"].members) == {afternoon.id, diurnal.id}


def test_a_ticket_whose_anomaly_joins_a_later_incident_lets_go_of_it():
    """A route change has its own ticket; its host then goes dark and the route change becomes a member
    of the outage's incident: the outage's ticket takes it, and the route change's own ticket is told
    and resolved rather than left open for ever."""
    from pathwatch.models.anomaly import Anomaly
    from pathwatch.models.incidents import IncidentGrouper

    def make(kind, source, destination, start):
        return Anomaly.open(kind, source, destination, start=start, detected_at=start + 600, severity="critical",
                            score=1.0, summary=f"{kind}.", evidence={})

    grouper, backend = IncidentGrouper(), MemoryBackend()
    reconciler = reconcile.Reconciler(backend)
    route, dark = make("route_change", "a", "c", T0), make("no_data", "a", "b", T0 + 1800)
    stream = [state.to_dict() for anomaly in (route, dark, route.closed(T0 + 2 * HOUR), dark.closed(T0 + 3 * HOUR))
              for state in grouper.add(anomaly)]
    for message in stream:
        reconciler.handle(message)
    assert [t["status"] for t in backend.store.values()] == ["resolved", "resolved"]
    own, outage = backend.store["1"], backend.store["2"]
    assert set(outage["state"].members) == {route.id, dark.id}
    assert "part of a larger incident, followed on mem#2" in own["texts"][-1]
    calls = list(backend.calls)
    restarted = reconcile.Reconciler(backend)
    for message in stream:                    # the stream read again after a restart: nothing repeated
        restarted.handle(message)
    assert backend.calls == calls
