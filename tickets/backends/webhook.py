"""A generic JSON webhook as the ticket system: each operation is POSTed to one URL.

The receiver (a chat bridge, a ticketing integration, a script) gets one JSON object per
operation::

    {"action": "create" | "comment" | "resolve" | "reopen" | "update",
     "operation_id": "<uuid5 of ticket and new state: the same operation repeated has the same id>",
     "ticket": {"id": "...", "key": "<problem key>", "status": "open" | "resolved", "priority": 60},
     "subject": "... (create only)", "text": "... (not for update)", "state": {...}}

and answers 2xx. A webhook cannot be asked which tickets exist, so this backend keeps a ledger
(a JSON file) of what it has sent; a receiver should ignore an ``operation_id`` it has seen
(the one case it repeats: the service stopped between the POST and writing the ledger).
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from typing import Any, Mapping

import requests

from pathwatch.contract.ids import PATHWATCH_NAMESPACE
from pathwatch.tickets.backends.base import BackendError, ProblemState, Ticket, http_call


class WebhookBackend:
    name = "webhook"

    def __init__(self, url: str, ledger: str | Path, headers: Mapping[str, str] | None = None, timeout: float = 10.0):
        self.url = url
        self.ledger_path = Path(ledger)
        self.headers = dict(headers or {})
        self.timeout = timeout
        self.session = requests.Session()

    # --- the ledger: key -> tickets, newest last ---------------------------------------------
    def _ledger(self) -> dict[str, list[dict[str, Any]]]:
        try:
            return json.loads(self.ledger_path.read_text())
        except FileNotFoundError:
            return {}
        except ValueError as error:
            raise BackendError(f"webhook: ledger {self.ledger_path} is not JSON ({error})") from None

    def _save(self, ticket: Ticket, priority: int | None) -> None:
        ledger = self._ledger()
        for key in list(ledger):   # re-keyed: the ticket moves to its new key
            if key != ticket.key:
                ledger[key] = [entry for entry in ledger[key] if entry["id"] != ticket.id]
                if not ledger[key]:
                    del ledger[key]
        entries = ledger.setdefault(ticket.key, [])
        entry = {"id": ticket.id, "status": ticket.status, "state": ticket.state.to_text(),
                 "priority": priority if priority is not None else (entries[-1]["priority"] if entries else None)}
        if entries and entries[-1]["id"] == ticket.id:
            entries[-1] = entry
        else:
            entries.append(entry)
        self.ledger_path.parent.mkdir(parents=True, exist_ok=True)
        temporary = self.ledger_path.with_suffix(".tmp")
        temporary.write_text(json.dumps(ledger, indent=1, sort_keys=True))
        os.replace(temporary, self.ledger_path)

    @staticmethod
    def _ticket(key: str, entry: Mapping[str, Any]) -> Ticket:
        return Ticket(id=entry["id"], reference=f"webhook#{entry['id'][:8]}", key=key, status=entry["status"],
                      state=ProblemState.from_text(entry["state"]))

    # --- the interface ------------------------------------------------------------------------
    def tickets(self, key: str) -> list[Ticket]:
        return [self._ticket(key, entry) for entry in reversed(self._ledger().get(key, []))]

    def _all(self) -> list[Ticket]:
        return [self._ticket(key, entry) for key, entries in self._ledger().items() for entry in reversed(entries)]

    def holding(self, anomaly_id: str) -> list[Ticket]:
        return [t for t in self._all() if anomaly_id in t.state.members]

    def open_on_path(self, path: str) -> list[Ticket]:
        return [t for t in self._all() if t.is_open and any(m.path == path for m in t.state.open_members.values())]

    def open_on_host(self, host: str) -> list[Ticket]:
        return [t for t in self._all() if t.is_open and any(host in m.path.split(">") for m in t.state.open_members.values())]

    def _send(self, action: str, ticket: Ticket, priority: int | None, **fields: Any) -> Ticket:
        operation = str(uuid.uuid5(PATHWATCH_NAMESPACE, f"webhook|{ticket.id}|{action}|{ticket.status}|{ticket.state.to_text()}"))
        payload = {"action": action, "operation_id": operation,
                   "ticket": {"id": ticket.id, "key": ticket.key, "status": ticket.status, "priority": priority},
                   "state": json.loads(ticket.state.to_text()), **fields}
        http_call(self.session, "POST", self.url, f"webhook {self.url}", self.timeout, json=payload, headers=self.headers)
        self._save(ticket, priority)
        return ticket

    def create(self, key: str, subject: str, text: str, priority: int, state: ProblemState) -> Ticket:
        count = len(self._ledger().get(key, []))
        ticket_id = str(uuid.uuid5(PATHWATCH_NAMESPACE, f"webhook-ticket|{key}|{count}"))
        ticket = Ticket(ticket_id, f"webhook#{ticket_id[:8]}", key, "open", state)
        return self._send("create", ticket, priority, subject=subject, text=text)

    def comment(self, ticket: Ticket, text: str, state: ProblemState, priority: int | None = None) -> Ticket:
        return self._send("comment", Ticket(ticket.id, ticket.reference, ticket.key, ticket.status, state), priority, text=text)

    def resolve(self, ticket: Ticket, text: str, state: ProblemState) -> Ticket:
        return self._send("resolve", Ticket(ticket.id, ticket.reference, ticket.key, "resolved", state), None, text=text)

    def reopen(self, ticket: Ticket, text: str, state: ProblemState, priority: int) -> Ticket:
        return self._send("reopen", Ticket(ticket.id, ticket.reference, ticket.key, "open", state), priority, text=text)

    def update_state(self, ticket: Ticket, state: ProblemState, priority: int | None = None) -> Ticket:
        return self._send("update", Ticket(ticket.id, ticket.reference, ticket.key, ticket.status, state), priority)
