"""The generic JSON webhook backend against a real HTTP receiver on loopback."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from pathwatch.tickets import reconcile
from pathwatch.tickets.backends.base import BackendError, BackendUnavailable
from pathwatch.tickets.backends.webhook import WebhookBackend
from tests.tickets_stream import scenario


class Receiver:
    def __init__(self):
        self.posts: list[dict] = []
        self.fail = 0          # answer 503 to this many next requests
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                data = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if outer.fail:
                    outer.fail -= 1
                    self.send_response(503)
                else:
                    outer.posts.append(data)
                    self.send_response(204)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def receiver():
    r = Receiver()
    yield r
    r.server.shutdown()


def test_the_scenario_posts_exactly_the_expected_operations(receiver, tmp_path):
    steps = scenario()
    reconciler = reconcile.Reconciler(WebhookBackend(receiver.url, tmp_path / "ledger.json"))
    for index, step in enumerate(steps):
        if index in (1, 4, 12):
            receiver.fail = 1
            with pytest.raises(BackendUnavailable, match="HTTP 503"):
                reconciler.handle(step.anomaly)
        reconciler.handle(step.anomaly)
    expected = [s.action for s in steps if s.action != "skip"]
    assert [p["action"] for p in receiver.posts] == expected
    assert len({p["operation_id"] for p in receiver.posts}) == len(receiver.posts)
    tickets = {p["ticket"]["id"] for p in receiver.posts}
    assert len(tickets) == 3
    create = receiver.posts[0]
    assert create["subject"].startswith("[pathwatch] loss step at path ps1.a.example → ps1.b.example")
    assert create["ticket"]["priority"] == 30 and "Hypothesis: " in create["text"]
    assert receiver.posts[2]["action"] == "resolve" and receiver.posts[2]["ticket"]["status"] == "resolved"
    # A restart (a new backend on the same ledger) re-reading the whole stream sends nothing.
    again = reconcile.Reconciler(WebhookBackend(receiver.url, tmp_path / "ledger.json"))
    for step in steps:
        again.handle(step.anomaly)
    assert len(receiver.posts) == len(expected)


def test_an_unreachable_receiver_is_unavailable_and_a_refusal_is_permanent(receiver, tmp_path):
    receiver.fail = 0
    receiver.server.RequestHandlerClass.do_POST = lambda self: (self.send_response(400), self.end_headers())
    with pytest.raises(BackendError, match="HTTP 400") as refused:
        reconcile.Reconciler(WebhookBackend(receiver.url, tmp_path / "l.json")).handle(scenario()[0].anomaly)
    assert not isinstance(refused.value, BackendUnavailable)
    receiver.server.shutdown()
    receiver.server.server_close()
    backend = WebhookBackend(receiver.url, tmp_path / "ledger.json", timeout=2)
    with pytest.raises(BackendUnavailable, match="ConnectionError"):
        reconcile.Reconciler(backend).handle(scenario()[0].anomaly)
