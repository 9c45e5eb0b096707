"""Hostile strings in an anomaly reach the ticket as text: sent as text/plain, byte for byte,
with a one-line subject; and Request Tracker gives back what was sent (issue 19, item 3).

The unit tests drive the reconciler and the RT backend with a stand-in for ``requests.Session``
that records the requests and answers as an empty RT would, and check the bytes that would go
on the wire. The ``tickets`` test does the same against a real RT 5.
"""

from __future__ import annotations

import json
import re

import pytest
import requests

from pathwatch.models.anomaly import Anomaly
from pathwatch.models.incidents import problem_keys
from pathwatch.tickets import body
from pathwatch.tickets.backends.rt import RTBackend
from pathwatch.tickets.reconcile import Reconciler
from tests.tickets_stack import ticket_stack  # noqa: F401  (the fixture)
from tests.untrusted import HOSTILE, MARKUP, SQLISH, unicode_10k

T0 = 1_767_225_600.0   # 2026-01-01T00:00:00Z
SUPERSET = "http://superset.invalid"
# What a one-line field must not hold (controls, line breaks, bidi controls, invisible characters).
UNSAFE_IN_ONE_LINE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]")


def hostile_route_change(source: str, destination: str, tag: str = "") -> dict:
    """A route change whose divergence hop is markup (so its problem key, subject and TicketSQL
    carry it), and whose evidence holds all three hostile strings."""
    hop = MARKUP + tag
    return Anomaly.open(
        "route_change", source, destination, start=T0, detected_at=T0 + 60, severity="major", score=1.0,
        summary=f"IP-level route change at hop 4: {hop} → {SQLISH}.",
        evidence={"divergence_ttl": 4, "old_hops": ["10.0.0.1", hop, "10.0.0.3"], "new_hops": ["10.0.0.1", SQLISH],
                  "hop_hostname": MARKUP, "as_owner": SQLISH, "tool_error": unicode_10k(),
                  "old_as_path": [], "new_as_path": [], "as_changed": False}).to_dict()


class _Reply:
    def __init__(self, data: dict, status: int = 200):
        self.status_code, self._data = status, data
        self.text = json.dumps(data)

    def json(self) -> dict:
        return self._data


class RecordingSession:
    """Stands in for ``requests.Session``: keeps each request as ``requests`` would send it
    (method, URL, the encoded body) and answers as an empty RT does (no tickets; ticket 7 made)."""

    def __init__(self):
        self.headers: dict = {}
        self.sent: list[requests.PreparedRequest] = []

    def request(self, method: str, url: str, timeout: float | None = None, **kwargs) -> _Reply:
        self.sent.append(requests.Request(method, url, headers=self.headers, **kwargs).prepare())
        if method == "GET":
            return _Reply({"items": []})
        return _Reply({"id": 7}, 201) if url.endswith("/ticket") else _Reply(["Comment recorded"])


def _backend() -> tuple[RTBackend, RecordingSession]:
    backend = RTBackend("http://rt.invalid", "t0ken", "pathwatch")
    backend.session = session = RecordingSession()
    backend.session.headers.update({"Content-Type": "application/json"})
    return backend, session


def _posted(session: RecordingSession) -> list[tuple[str, dict]]:
    return [(r.url, json.loads(r.body)) for r in session.sent if r.method == "POST"]


def test_a_new_ticket_carries_the_hostile_strings_verbatim_as_text_plain():
    backend, session = _backend()
    anomaly = hostile_route_change("ps1.a.example", "ps1.b.example")
    outcome = Reconciler(backend, superset_url=SUPERSET).handle(anomaly)
    assert outcome.action == "create"
    [(url, payload)] = _posted(session)
    assert url == "http://rt.invalid/REST/2.0/ticket"
    assert payload["ContentType"] == "text/plain"
    key = problem_keys(anomaly)[0]
    assert payload["Content"] == body.body(anomaly, key, SUPERSET)
    for text in HOSTILE:
        assert f": {text}\n" in payload["Content"]        # each evidence line holds it as it is
    assert f"What: IP-level route change at hop 4: {MARKUP} → {SQLISH}." in payload["Content"]
    assert f"old hops from TTL 3: 10.0.0.1 {MARKUP} 10.0.0.3" in payload["Content"]
    # the subject is one line of text: the markup kept as text, nothing that breaks a line or reorders it
    assert payload["Subject"] == f"[pathwatch] route change at hop {MARKUP} (ps1.a.example → ps1.b.example)"
    assert payload["CustomFields"]["pathwatch-key"] == key == f"route_change|hop:{MARKUP}"
    assert all(len(v) <= 255 for v in payload["CustomFields"]["pathwatch-paths"])


def test_the_key_is_searched_as_one_quoted_ticketsql_string():
    backend, session = _backend()
    backend.tickets(f"route_change|hop:{SQLISH}\\")
    [search] = [r for r in session.sent if r.method == "GET"]
    query = requests.utils.unquote(search.url.split("query=")[1].split("&")[0].replace("+", " "))
    assert query == "Queue = 'pathwatch' AND CF.{pathwatch-key} = 'route_change|hop:\\'); drop table anomalies; --\\\\'"


def test_a_comment_carries_them_as_text_plain_too():
    backend, session = _backend()
    reconciler = Reconciler(backend, superset_url=SUPERSET)
    reconciler.handle(hostile_route_change("ps1.a.example", "ps1.b.example"))
    other = hostile_route_change("ps1.c.example", "ps1.b.example")
    assert reconciler.handle(other).action == "comment"
    url, payload = _posted(session)[-1]
    assert url == "http://rt.invalid/REST/2.0/ticket/7/comment"
    assert payload["ContentType"] == "text/plain"
    assert payload["Content"] == body.grown_comment(other, 2, True, SUPERSET)
    assert f"What: IP-level route change at hop 4: {MARKUP} → {SQLISH}." in payload["Content"]


@pytest.mark.parametrize("hop", [unicode_10k(), "a\r\nBcc: victim@example.org", "x\u202etxt.exe", "\x00\x1b[31m"])
def test_a_subject_is_one_short_line_whatever_the_hop_name(hop):
    anomaly = hostile_route_change("ps1.a.example", "ps1.b.example") | {
        "evidence": {"divergence_ttl": 2, "old_hops": [hop, "10.0.0.2"]}}
    subject = body.subject(anomaly, problem_keys(anomaly)[0])
    assert subject.startswith("[pathwatch] route change at hop ")
    assert len(subject.encode()) <= body.SUBJECT_MAX
    assert not UNSAFE_IN_ONE_LINE.search(subject), repr(subject)


def test_the_body_keeps_non_ascii_evidence_in_lists_as_text():
    anomaly = hostile_route_change("ps1.a.example", "ps1.b.example")
    anomaly["evidence"]["names"] = ["路由器", MARKUP]
    text = body.body(anomaly, "k")
    assert '  names: ["路由器", "<img src=x onerror=\\"window.__pwned=1;alert(1)\\">"]' in text


# --- the same against a real Request Tracker -------------------------------------------------


def _rt_get(stack, path: str, **params) -> dict:
    reply = requests.get(f"{stack.rt.url}/REST/2.0/{path}", params=params,
                         headers={"Authorization": f"token {stack.rt.token()}"}, timeout=30)
    reply.raise_for_status()
    return reply.json()


def _messages(stack, number: str, kind: str) -> list[dict]:
    """The attachments (Content as REST2 gives it: text, ContentType) of ticket ``number``'s ``kind`` transactions."""
    out = []
    for transaction in stack.history(number):
        if transaction["Type"] != kind:
            continue
        items = _rt_get(stack, f"transaction/{transaction['id']}/attachments",
                        fields="Content,ContentType,Headers")["items"]
        for item in items:
            if item.get("Content"):
                out.append({**item, "text": item["Content"]})
    return out


@pytest.mark.tickets
@pytest.mark.parametrize("tag", ["u1", "-" + "é" * 200 + "‮" * 3 + "ü" * 50], ids=["short", "key-over-255"])
def test_rt_keeps_hostile_text_as_text_plain_byte_for_byte(ticket_stack, tag):
    """Also for a key longer than RT's 255-character custom-field value (a hop name at the
    contract's 255-character limit): still found again by TicketSQL."""
    backend = ticket_stack.backend()
    first = hostile_route_change(f"ps1.untrusted-a{len(tag)}.example", "ps1.untrusted-b.example", tag=tag)
    key = problem_keys(first)[0]
    created = Reconciler(backend, superset_url=SUPERSET).handle(first)
    assert created.action == "create"
    number = created.ticket.id

    [message] = _messages(ticket_stack, number, "Create")
    assert message["ContentType"] == "text/plain"
    assert message["text"].encode() == body.body(first, key, SUPERSET).encode()
    raw = ticket_stack.get(number)
    assert raw["Subject"] == body.subject(first, key)

    # A new process finds the ticket again by its hostile key (TicketSQL) and repeats nothing.
    again = Reconciler(ticket_stack.backend(), superset_url=SUPERSET)
    assert again.handle(first).action == "skip"
    other = hostile_route_change(f"ps1.untrusted-c{len(tag)}.example", "ps1.untrusted-b.example", tag=tag)
    assert again.handle(other).action == "comment"
    [comment] = _messages(ticket_stack, number, "Comment")
    assert comment["ContentType"] == "text/plain"
    assert comment["text"].encode() == body.grown_comment(other, 2, True, SUPERSET).encode()
    assert [t.id for t in backend.tickets(key)] == [number]
