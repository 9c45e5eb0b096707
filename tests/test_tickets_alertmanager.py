"""Tickets through a real Alertmanager: pathwatch posts alerts, Alertmanager groups them and
notifies the receiver, which drives the same ticket operations in a real RT."""

from __future__ import annotations

import threading
import time

import pytest
import requests

from pathwatch.tickets import reconcile
from pathwatch.tickets.alertmanager import AlertPoster, anomalies_of, receiver
from pathwatch.tickets.backends.base import Member
from pathwatch.models.incidents import path_of
from tests.test_tickets_rt import _expected, _summary
from tests.tickets_stack import ticket_stack  # noqa: F401  (the fixture)
from tests.tickets_stream import scenario

pytestmark = pytest.mark.tickets


@pytest.fixture
def served(ticket_stack):
    seen: list[tuple[str, Member]] = []
    failures = {"next": 0}
    reconciler = reconcile.Reconciler(ticket_stack.backend())
    inner = reconciler.handle

    def handle(anomaly):
        if failures["next"]:
            failures["next"] -= 1
            from pathwatch.tickets.backends.base import BackendUnavailable
            raise BackendUnavailable("rt: down (test)")
        return inner(anomaly)

    reconciler.handle = handle  # type: ignore[method-assign]
    server = receiver(reconciler, ticket_stack.config.alertmanager_receiver_port,
                      on_outcome=lambda outcome, a: seen.append((a["id"], Member(path_of(a), a["severity"], a["end"] is None))))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield seen, failures
    server.shutdown()
    server.server_close()


def _wait_for(seen, anomaly_id: str, member: Member, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if (anomaly_id, member) in seen:
            return
        time.sleep(0.05)
    raise AssertionError(f"Alertmanager never delivered {anomaly_id} as {member} (seen: {seen[-5:]})")


def test_the_stream_through_alertmanager_yields_the_same_tickets(ticket_stack, served):
    seen, failures = served
    poster = AlertPoster(f"http://127.0.0.1:{ticket_stack.config.alertmanager_port}")
    steps = scenario("am")
    latest: dict[str, Member] = {}
    for index, step in enumerate(steps):
        a = step.anomaly
        member = Member(path_of(a), a["severity"], a["end"] is None)
        if index == 8:
            failures["next"] = 1     # RT "down" for this notification: the receiver answers 503
        poster.handle(a)
        if latest.get(a["id"]) != member:   # an identical state changes no alert: nothing to wait for
            _wait_for(seen, a["id"], member)
        latest[a["id"]] = member
    assert failures["next"] == 0, "the failing notification was never sent"
    _expected(_summary(ticket_stack, "am"))
    # Alertmanager holds exactly the one anomaly still open, and the poster would keep it alive.
    alerts = requests.get(f"http://127.0.0.1:{ticket_stack.config.alertmanager_port}/api/v2/alerts",
                          params={"active": "true", "filter": 'problem_key=~".*am.*"'}, timeout=10).json()
    firing = [x for x in alerts if x["status"]["state"] == "active"]
    assert [x["labels"]["anomaly_id"] for x in firing] == [steps[-1].anomaly["id"]]
    assert poster.repost() == 1
    restarted = AlertPoster(poster.url)
    assert restarted.reload() >= 1 and steps[-1].anomaly["id"] in restarted.active


def test_an_expired_alert_closes_at_its_end_and_firing_states_win():
    open_state = scenario("x")[0].anomaly
    grown = scenario("x")[1].anomaly
    import json
    notification = {"alerts": [
        {"status": "resolved", "endsAt": "2026-01-01T03:00:00.123456789Z", "annotations": {"anomaly": json.dumps(open_state)}},
        {"status": "firing", "annotations": {"anomaly": json.dumps(grown)}},
    ]}
    assert [a["severity"] for a in anomalies_of(notification)] == ["major"]
    closed = anomalies_of({"alerts": notification["alerts"][:1]})
    assert closed[0]["end"] == "2026-01-01T03:00:00.123456Z"
