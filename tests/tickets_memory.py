"""A ticket system in memory: the fake the reconciler's unit tests (test_tickets_logic.py) run
against, and the fault-free replay the fault matrix (tests/faults/matrix.py) sets RT's tickets beside."""

from __future__ import annotations

from pathwatch.tickets.backends.base import BackendUnavailable, Ticket


class MemoryBackend:
    """Tickets in a dict; ``fail_next`` makes the next changing call raise after (or before) applying."""

    name = "memory"

    def __init__(self):
        self.store: dict[str, dict] = {}
        self.calls: list[tuple[str, str]] = []
        self.fail_next: str | None = None   # "before" or "after"

    def _ticket(self, number: str) -> Ticket:
        t = self.store[number]
        return Ticket(number, f"mem#{number}", t["key"], t["status"], t["state"])

    def tickets(self, key):
        matching = sorted((n for n, t in self.store.items() if t["key"] == key), key=int, reverse=True)
        return [self._ticket(n) for n in matching]

    def holding(self, anomaly_id):
        return [self._ticket(n) for n in sorted(self.store, key=int, reverse=True) if anomaly_id in self.store[n]["state"].members]

    def open_on_path(self, path):
        return [self._ticket(n) for n in sorted(self.store, key=int, reverse=True)
                if self.store[n]["status"] != "resolved" and any(m.path == path for m in self.store[n]["state"].open_members.values())]

    def open_on_host(self, host):
        return [self._ticket(n) for n in sorted(self.store, key=int, reverse=True)
                if self.store[n]["status"] != "resolved"
                and any(host in m.path.split(">") for m in self.store[n]["state"].open_members.values())]

    def _apply(self, action, number, change):
        if self.fail_next == "before":
            self.fail_next = None
            raise BackendUnavailable("memory: down")
        change()
        self.calls.append((action, number))
        if self.fail_next == "after":
            self.fail_next = None
            raise BackendUnavailable("memory: reply lost")
        return self._ticket(number)

    def create(self, key, subject, text, priority, state):
        number = str(len(self.store) + 1)
        def change():
            self.store[number] = {"key": key, "status": "open", "state": state, "priority": priority,
                                    "subject": subject, "texts": [text]}
        return self._apply("create", number, change)

    def _set(self, ticket, state, priority=None, status=None, text=None):
        t = self.store[ticket.id]
        t["state"], t["key"] = state, ticket.key
        if priority is not None:
            t["priority"] = priority
        if status:
            t["status"] = status
        if text:
            t["texts"].append(text)

    def comment(self, ticket, text, state, priority=None):
        return self._apply("comment", ticket.id, lambda: self._set(ticket, state, priority, text=text))

    def resolve(self, ticket, text, state):
        return self._apply("resolve", ticket.id, lambda: self._set(ticket, state, status="resolved", text=text))

    def reopen(self, ticket, text, state, priority):
        return self._apply("reopen", ticket.id, lambda: self._set(ticket, state, priority, "open", text))

    def update_state(self, ticket, state, priority=None):
        return self._apply("update", ticket.id, lambda: self._set(ticket, state, priority))
