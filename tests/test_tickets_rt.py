"""Tickets against a real Request Tracker 5 (started by the test through pathwatch's stack)."""

from __future__ import annotations

import json
import threading
import time

import pytest
import requests

from pathwatch.stack.component import StackError
from pathwatch.tickets import reconcile
from pathwatch.tickets.service import Handler, Retry
from tests.tickets_stack import ticket_stack  # noqa: F401  (the fixture)
from tests.tickets_stream import scenario

pytestmark = pytest.mark.tickets


def _handler(stack, **kwargs) -> tuple[Handler, list]:
    letters: list = []
    return Handler(reconcile.Reconciler(stack.backend()), dead_letters=letters.append,
                   retry=Retry(first=0.2, longest=1.0), **kwargs), letters


def _summary(stack, tag: str) -> dict:
    """For each ticket of the scenario tagged ``tag``: status, priority, and its transactions
    counted by kind (create, comment, status changes)."""
    backend = stack.backend()
    steps = scenario(tag)
    keys = {"loss": None, "route": None}
    from pathwatch.models.incidents import problem_keys

    keys["loss"] = problem_keys(steps[0].anomaly)[0]
    keys["route"] = problem_keys(steps[6].anomaly)[0]
    out = {}
    for name, key in keys.items():
        for ticket in backend.tickets(key):
            history = stack.history(ticket.id)
            raw = stack.get(ticket.id)
            out[ticket.reference] = {
                "key": name, "status": raw["Status"], "priority": int(raw["Priority"]),
                "creates": sum(1 for t in history if t["Type"] == "Create"),
                "comments": sum(1 for t in history if t["Type"] == "Comment"),
                "statuses": [t["NewValue"] for t in history if t["Type"] == "Status"],
                "members": len(ticket.state.members),
            }
    return out


def _expected(summary: dict) -> None:
    """The scenario's exact result in RT: three tickets, these comments and statuses."""
    by = sorted(summary.values(), key=lambda t: (t["key"], t["status"] != "resolved"))
    loss, later, route = by[0], by[1], by[2]
    assert len(summary) == 3
    assert loss == {"key": "loss", "status": "resolved", "priority": 30, "creates": 1,
                    "comments": 4,          # grew; resolved (with its comment); reopened; resolved
                    "statuses": ["resolved", "open", "resolved"], "members": 2}
    assert later == {"key": "loss", "status": "new", "priority": 30, "creates": 1, "comments": 0,
                     "statuses": [], "members": 1}
    assert route == {"key": "route", "status": "resolved", "priority": 60, "creates": 1,
                     "comments": 9 + 9 + 1,  # nine more paths, nine recoveries, the last one resolves
                     "statuses": ["resolved"], "members": 10}


def test_the_stream_yields_exactly_the_expected_tickets_comments_and_statuses(ticket_stack):
    handler, letters = _handler(ticket_stack)
    steps = scenario("plain")
    actions = [handler.handle(json.dumps(step.anomaly).encode()).outcome.action for step in steps]
    assert actions == [step.action for step in steps]
    assert letters == []
    summary = _summary(ticket_stack, "plain")
    _expected(summary)
    # The body an engineer reads, from RT itself.
    first = min(summary, key=lambda ref: int(ref.split("#")[1]))
    reply = requests.get(f"{ticket_stack.rt.url}/REST/2.0/ticket/{first.split('#')[1]}/history",
                         params={"fields": "Type"}, headers={"Authorization": f"token {ticket_stack.rt.token()}"}, timeout=30)
    create = [t for t in reply.json()["items"] if t["Type"] == "Create"][0]
    attachments = requests.get(f"{ticket_stack.rt.url}/REST/2.0/transaction/{create['id']}/attachments",
                               params={"fields": "Content,ContentType"},
                               headers={"Authorization": f"token {ticket_stack.rt.token()}"}, timeout=30).json()["items"]
    text = "".join(a["Content"] for a in attachments if a.get("Content"))
    assert "What: Loss stepped from 0 to 0.5 %." in text
    assert "Where: ps1.aplain.example → ps1.bplain.example" in text
    assert "Hypothesis: Loss stepped up at once" in text
    assert "Problem key: loss_step|path:ps1.aplain.example>ps1.bplain.example" in text


def test_a_restart_mid_stream_creates_no_duplicate(ticket_stack):
    steps = scenario("restart")
    first, _ = _handler(ticket_stack)
    for step in steps[:14]:      # open, grow, close, reopen, close, and seven of the ten paths
        first.handle(json.dumps(step.anomaly).encode())
    second, _ = _handler(ticket_stack)   # a new process: no memory, offsets committed up to 10
    actions = [second.handle(json.dumps(step.anomaly).encode()).outcome.action for step in steps[10:]]
    assert actions[:4] == ["skip"] * 4   # re-read messages change nothing
    _expected(_summary(ticket_stack, "restart"))


def test_rt_down_is_retried_without_losing_or_duplicating_an_update(ticket_stack):
    steps = scenario("down")
    handler, letters = _handler(ticket_stack)
    retries: list[int] = []
    handler.on_retry = lambda attempt, error: retries.append(attempt)
    for step in steps[:8]:
        handler.handle(json.dumps(step.anomaly).encode())
    rt = ticket_stack.rt
    assert rt.stop() is not None, "RT was not running"
    results: list = []
    worker = threading.Thread(target=lambda: results.append(handler.handle(json.dumps(steps[8].anomaly).encode())))
    worker.start()
    deadline = time.monotonic() + 30
    while len(retries) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert len(retries) >= 2, "the handler did not retry while RT was down"
    assert worker.is_alive() and results == []
    rt.start(lambda message: None)
    rt.wait_ready(time.monotonic() + 120, lambda message: None)
    worker.join(60)
    assert not worker.is_alive()
    assert results[0].outcome.action == "comment" and results[0].attempts >= 3
    for step in steps[9:]:
        handler.handle(json.dumps(step.anomaly).encode())
    assert letters == []
    _expected(_summary(ticket_stack, "down"))


def test_a_malformed_anomaly_is_a_dead_letter_naming_the_field_and_touches_no_ticket(ticket_stack):
    handler, letters = _handler(ticket_stack)
    anomaly = dict(scenario("bad")[0].anomaly)
    anomaly["severity"] = "catastrophic"
    handled = handler.handle(json.dumps(anomaly).encode(), "pathwatch.anomalies", 2, 41)
    assert handled.outcome is None
    (letter,) = letters
    assert letter["stage"] == "tickets" and letter["field"] == "severity"
    assert "severity" in letter["reason"] and json.loads(letter["input"]) == anomaly
    assert (letter["topic"], letter["kafka_partition"], letter["kafka_offset"]) == ("pathwatch.anomalies", 2, 41)
    assert ticket_stack.backend().tickets("loss_step|path:ps1.abad.example>ps1.bbad.example") == []


def test_the_stack_reports_rt_with_working_credentials(ticket_stack):
    from pathwatch.stack import manage

    status = manage.status(ticket_stack.config, ("rt", "alertmanager"))
    rt = status.components["rt"]
    assert rt.state == "running" and rt.info["queue"] == "NOC"
    root = requests.get(f"{rt.info['url']}/REST/2.0/queues/all", auth=("root", rt.info["root_password"]), timeout=30)
    assert root.status_code == 200
    wrong = requests.get(f"{rt.info['url']}/REST/2.0/queues/all", auth=("root", "not-the-password"), timeout=30)
    assert wrong.status_code == 401
    with pytest.raises(StackError, match="PATHWATCH_RT_TOKEN"):
        type(ticket_stack.rt)(type(ticket_stack.config)(home=ticket_stack.config.home, rt_url="http://rt.invalid")).token()


def test_a_consequence_joins_its_cause_and_a_restarted_service_finds_it_by_anomaly_id(ticket_stack):
    from pathwatch.models.anomaly import Anomaly
    from tests.tickets_stream import HOUR, T0, route_change

    route = route_change("ps1.cx.example", "ps1.cy.example", T0, hop="10.77.0.1")
    shift = Anomaly.open("latency_shift", "ps1.cx.example", "ps1.cy.example", start=T0 + 60, detected_at=T0 + 600,
                         severity="major", score=0.8, summary="Delay +3.4 ms.", evidence={"step_ms": 3.4})
    handler, _ = _handler(ticket_stack)
    created = handler.handle(json.dumps(route.to_dict()).encode()).outcome
    joined = handler.handle(json.dumps(shift.to_dict()).encode()).outcome
    assert (joined.action, joined.ticket.reference) == ("comment", created.ticket.reference)
    backend = ticket_stack.backend()
    assert [t.reference for t in backend.holding(shift.id)] == [created.ticket.reference]
    assert [t.reference for t in backend.open_on_path("ps1.cx.example>ps1.cy.example")] == [created.ticket.reference]
    restarted, _ = _handler(ticket_stack)
    assert restarted.handle(json.dumps(route.closed(T0 + HOUR).to_dict()).encode()).outcome.action == "comment"
    assert restarted.handle(json.dumps(shift.closed(T0 + HOUR).to_dict()).encode()).outcome.action == "resolve"
    assert backend.open_on_path("ps1.cx.example>ps1.cy.example") == []
    assert backend.tickets("latency_shift|path:ps1.cx.example>ps1.cy.example") == []
    assert ticket_stack.get(created.ticket.id)["Status"] == "resolved"


def test_a_host_problem_is_re_keyed_to_the_shared_host_in_rt(ticket_stack):
    from pathwatch.models.anomaly import Anomaly
    from tests.tickets_stream import HOUR, T0

    def clock(source, destination):
        return Anomaly.open("clock_error", f"ps1.{source}.rk.example", f"ps1.{destination}.rk.example", start=T0,
                            detected_at=T0, severity="major", score=1.0, summary="Clock trouble.", evidence={})

    anomalies = [clock("umd", "ucl"), clock("nikhef", "ucl"), clock("ucl", "bnl")]
    handler, _ = _handler(ticket_stack)
    outcomes = [handler.handle(json.dumps(a.to_dict()).encode()).outcome for a in anomalies]
    assert [o.action for o in outcomes] == ["create", "comment", "comment"]
    backend = ticket_stack.backend()
    (ticket,) = backend.tickets("clock_error|host:ps1.ucl.rk.example")
    assert backend.tickets("clock_error|host:ps1.umd.rk.example") == []
    assert [t.reference for t in backend.open_on_host("ps1.bnl.rk.example")] == [ticket.reference]
    assert backend.open_on_host("ps1.bn.rk.example") == []        # LIKE matches substrings; hosts must be exact
    restarted, _ = _handler(ticket_stack)
    closing = [restarted.handle(json.dumps(a.closed(T0 + HOUR).to_dict()).encode()).outcome.action for a in anomalies]
    assert closing == ["comment", "comment", "resolve"]
    assert ticket_stack.get(ticket.id)["Status"] == "resolved"
