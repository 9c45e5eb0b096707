"""Request Tracker 5 through REST2 (token auth): the ticket system the NOC works in.

Each ticket carries custom fields made by the stack's initial data
(``stack/assets/rt/initialdata.pl``): ``pathwatch-key`` (the problem key; found
again with TicketSQL), ``pathwatch-state`` (the anomalies it covers, JSON) and, to be
searched, ``pathwatch-anomalies`` (their ids) and ``pathwatch-paths`` (the paths still
affected). A comment and
the new state go in one request, with the status when resolving or reopening; a priority
change goes first in its own request, so the state is always the last thing written.
"""

from __future__ import annotations

import hashlib
from typing import Any

import requests

from pathwatch.tickets.backends.base import BackendError, BackendUnavailable, ProblemState, Ticket, http_call

KEY_FIELD, STATE_FIELD = "pathwatch-key", "pathwatch-state"
# Searchable copies of the state: every anomaly id it covers, every path still affected.
ANOMALIES_FIELD, PATHS_FIELD = "pathwatch-anomalies", "pathwatch-paths"
CLOSED = ("resolved", "rejected", "deleted")


CF_VALUE_MAX = 255   # UTF-8 bytes: RT keeps longer custom-field values apart, and TicketSQL's = then matches others


def cf_value(value: str) -> str:
    """``value`` as stored in and searched for in a searchable custom field: itself up to
    :data:`CF_VALUE_MAX` UTF-8 bytes, else its start, "…#" and a digest of the whole (idempotent).

    >>> cf_value("k|hop:x"), len(cf_value("k|hop:" + "é" * 300).encode()) <= 255, cf_value(cf_value("é" * 300)) == cf_value("é" * 300)
    ('k|hop:x', True, True)
    """
    data = value.encode("utf-8", "surrogatepass")
    if len(data) <= CF_VALUE_MAX:
        return value
    tail = "…#" + hashlib.sha256(data).hexdigest()[:32]
    return data[: CF_VALUE_MAX - len(tail.encode())].decode("utf-8", "ignore") + tail


def ticketsql_string(value: str) -> str:
    """A quoted TicketSQL string.

    >>> ticketsql_string("it's")
    "'it\\\\'s'"
    """
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


class RTBackend:
    name = "rt"

    def __init__(self, url: str, token: str, queue: str, timeout: float = 30.0):
        self.url = url.rstrip("/")
        self.queue = queue
        self.timeout = timeout
        self.session = requests.Session()
        self.session.headers.update({"Authorization": f"token {token}", "Content-Type": "application/json"})

    def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        where = f"rt {method} {path}"
        response = http_call(self.session, method, f"{self.url}/REST/2.0/{path}", where, self.timeout, **kwargs)
        try:
            return response.json()
        except ValueError:
            raise BackendUnavailable(f"{where}: not JSON: {response.text[:200]}") from None

    def ticket_url(self, number: str) -> str:
        return f"{self.url}/Ticket/Display.html?id={number}"

    def _ticket(self, item: dict[str, Any], key: str | None = None) -> Ticket:
        fields = {cf.get("name"): (cf.get("values") or [None])[0] for cf in item.get("CustomFields") or []}
        number = str(item["id"])
        status = "resolved" if item.get("Status") in CLOSED else "open"
        return Ticket(number, f"RT#{number}", key or fields.get(KEY_FIELD) or "", status,
                      ProblemState.from_text(fields.get(STATE_FIELD)), self.ticket_url(number))

    def get(self, number: str) -> Ticket:
        """One ticket, as it is now."""
        return self._ticket(self._call("GET", f"ticket/{number}"))

    def _search(self, condition: str, key: str | None = None) -> list[Ticket]:
        query = f"Queue = {ticketsql_string(self.queue)} AND {condition}"
        found = self._call("GET", "tickets", params={"query": query, "orderby": "id", "order": "DESC",
                                                    "fields": "Status,CustomFields", "per_page": 100})
        return [self._ticket(item, key) for item in found.get("items") or []]

    def tickets(self, key: str) -> list[Ticket]:
        return self._search(f"CF.{{{KEY_FIELD}}} = {ticketsql_string(cf_value(key))}", key)

    def holding(self, anomaly_id: str) -> list[Ticket]:
        return self._search(f"CF.{{{ANOMALIES_FIELD}}} = {ticketsql_string(anomaly_id)}")

    def open_on_path(self, path: str) -> list[Ticket]:
        return self._search(f"CF.{{{PATHS_FIELD}}} = {ticketsql_string(cf_value(path))} AND Status != 'resolved' "
                            f"AND Status != 'rejected'")

    def open_on_host(self, host: str) -> list[Ticket]:
        found = self._search(f"CF.{{{PATHS_FIELD}}} LIKE {ticketsql_string(host)} AND Status != 'resolved' "
                             f"AND Status != 'rejected'")   # LIKE is a substring match: keep exact hosts
        return [t for t in found if any(host in m.path.split(">") for m in t.state.open_members.values())]

    @staticmethod
    def _fields(key: str, state: ProblemState) -> dict[str, Any]:
        """The custom fields that follow from a key and state (the searchable lists are never
        empty: RT keeps a field's old values when given none; searchable values are :func:`cf_value`)."""
        paths = sorted({cf_value(m.path) for m in state.open_members.values()}) or ["-"]
        return {KEY_FIELD: cf_value(key), STATE_FIELD: state.to_text(), ANOMALIES_FIELD: sorted(state.members),
                PATHS_FIELD: paths}

    def all(self) -> list[dict[str, Any]]:
        """Every ticket of the queue (newest first): reference, RT status, paths covered, subject."""
        items, page = [], 1
        while True:
            found = self._call("GET", "tickets", params={
                "query": f"Queue = {ticketsql_string(self.queue)}", "orderby": "id", "order": "DESC",
                "fields": "Status,Subject,CustomFields", "per_page": 100, "page": page})
            for item in found.get("items") or []:
                ticket = self._ticket(item)
                items.append({"reference": ticket.reference, "status": item.get("Status"), "key": ticket.key,
                              "paths": ticket.state.paths, "subject": item.get("Subject"), "url": ticket.url})
            if len(found.get("items") or []) < 100:
                return items
            page += 1

    def create(self, key: str, subject: str, text: str, priority: int, state: ProblemState) -> Ticket:
        made = self._call("POST", "ticket", json={
            "Queue": self.queue, "Subject": subject, "Content": text, "ContentType": "text/plain",
            "Priority": priority, "CustomFields": self._fields(key, state)})
        if not made.get("id"):
            raise BackendError(f"rt POST ticket: no ticket id in the reply {made!r}")
        number = str(made["id"])
        return Ticket(number, f"RT#{number}", key, "open", state, self.ticket_url(number))

    def _message(self, ticket: Ticket, text: str, state: ProblemState, priority: int | None,
                 status: str | None = None) -> Ticket:
        if priority is not None:
            self._call("PUT", f"ticket/{ticket.id}", json={"Priority": priority})
        payload: dict[str, Any] = {"Content": text, "ContentType": "text/plain",
                                   "CustomFields": self._fields(ticket.key, state)}
        if status:
            payload["Status"] = status
        self._call("POST", f"ticket/{ticket.id}/comment", json=payload)
        new_status = {"resolved": "resolved", "open": "open"}.get(status or "", ticket.status)
        return Ticket(ticket.id, ticket.reference, ticket.key, new_status, state, ticket.url)

    def comment(self, ticket: Ticket, text: str, state: ProblemState, priority: int | None = None) -> Ticket:
        return self._message(ticket, text, state, priority)

    def resolve(self, ticket: Ticket, text: str, state: ProblemState) -> Ticket:
        return self._message(ticket, text, state, None, "resolved")

    def reopen(self, ticket: Ticket, text: str, state: ProblemState, priority: int) -> Ticket:
        return self._message(ticket, text, state, priority, "open")

    def update_state(self, ticket: Ticket, state: ProblemState, priority: int | None = None) -> Ticket:
        payload: dict[str, Any] = {"CustomFields": self._fields(ticket.key, state)}
        if priority is not None:
            payload["Priority"] = priority
        self._call("PUT", f"ticket/{ticket.id}", json=payload)
        return Ticket(ticket.id, ticket.reference, ticket.key, ticket.status, state, ticket.url)
