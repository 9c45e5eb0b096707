"""The small interface every ticket system implements, and the state a ticket carries.

A ticket holds its problem key (to be found again after a restart) and a compact state: the
anomalies (members) it covers, each with its path, severity and whether it is still open,
and when the problem last cleared. Every operation writes the new state together with the
change, so re-running an operation whose reply was lost finds the state already there and
does nothing twice.

>>> state = ProblemState({"id-1": Member("a>b", "major", True)}, None)
>>> ProblemState.from_text(state.to_text()) == state
True
>>> state.worst, state.open_paths
('major', 1)
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Protocol

SEVERITIES = ("info", "warning", "major", "critical")


class BackendError(RuntimeError):
    """The ticket system refused an operation (a permanent error: retrying will not help)."""


class BackendUnavailable(BackendError):
    """The ticket system could not be reached or failed (connection, timeout, 5xx): retry later."""


def http_call(session, method: str, url: str, where: str, timeout: float, **kwargs):
    """One HTTP request to a ticket system with its failures sorted for the service's retry loop:
    no answer, 5xx or 429 -> :class:`BackendUnavailable` (retry later); any other non-2xx ->
    :class:`BackendError` (permanent). Returns the ``requests`` response."""
    import requests

    try:
        response = session.request(method, url, timeout=timeout, **kwargs)
    except requests.RequestException as error:
        raise BackendUnavailable(f"{where}: {type(error).__name__}: {error}") from None
    if response.status_code >= 500 or response.status_code == 429:
        raise BackendUnavailable(f"{where}: HTTP {response.status_code}")
    if not 200 <= response.status_code < 300:
        raise BackendError(f"{where}: HTTP {response.status_code}: {response.text[:300]}")
    return response


@dataclass(frozen=True)
class Member:
    path: str          # source>destination
    severity: str
    open: bool


@dataclass(frozen=True)
class ProblemState:
    members: dict[str, Member] = field(default_factory=dict)
    cleared_at: float | None = None   # event time the last open member closed (Unix seconds)

    @property
    def open_members(self) -> dict[str, Member]:
        return {i: m for i, m in self.members.items() if m.open}

    @property
    def open_paths(self) -> int:
        return len({m.path for m in self.open_members.values()})

    @property
    def paths(self) -> int:
        return len({m.path for m in self.members.values()})

    @property
    def worst(self) -> str | None:
        """The highest severity among open members (None when none is open)."""
        ranks = [SEVERITIES.index(m.severity) for m in self.open_members.values()]
        return SEVERITIES[max(ranks)] if ranks else None

    def to_text(self) -> str:
        members = {i: [m.path, m.severity, int(m.open)] for i, m in sorted(self.members.items())}
        return json.dumps({"v": 1, "m": members, "c": self.cleared_at}, separators=(",", ":"))

    @classmethod
    def from_text(cls, text: str | None) -> "ProblemState":
        """The state stored in a ticket (empty for a ticket without one)."""
        if not text:
            return cls()
        data = json.loads(text)
        members = {i: Member(path, severity, bool(is_open)) for i, (path, severity, is_open) in data["m"].items()}
        return cls(members, data.get("c"))


@dataclass(frozen=True)
class Ticket:
    """A ticket as the reconciler sees it."""

    id: str                 # the backend's own id
    reference: str          # as people quote it, e.g. "RT#12"
    key: str
    status: str             # "open" or "resolved" (the backend maps its own statuses)
    state: ProblemState
    url: str | None = None

    @property
    def is_open(self) -> bool:
        return self.status != "resolved"


class Backend(Protocol):
    """A ticket system: find tickets by key, by anomaly or by affected path; create, comment, resolve, reopen, and a silent state update.

    Each call returns the ticket as it is afterwards; each writes the ticket's key (it may have
    been re-keyed to a shared host) and state. Errors: BackendUnavailable (retry),
    BackendError (permanent).
    """

    name: str

    def tickets(self, key: str) -> list[Ticket]:
        """The tickets with this problem key, whatever their status, newest first."""

    def holding(self, anomaly_id: str) -> list[Ticket]:
        """The tickets whose state covers this anomaly (newest first)."""

    def open_on_path(self, path: str) -> list[Ticket]:
        """The open tickets with an open anomaly on this path (``source>destination``)."""

    def open_on_host(self, host: str) -> list[Ticket]:
        """The open tickets with an open anomaly on a path from or to this host."""

    def create(self, key: str, subject: str, text: str, priority: int, state: ProblemState) -> Ticket: ...

    def comment(self, ticket: Ticket, text: str, state: ProblemState, priority: int | None = None) -> Ticket: ...

    def resolve(self, ticket: Ticket, text: str, state: ProblemState) -> Ticket: ...

    def reopen(self, ticket: Ticket, text: str, state: ProblemState, priority: int) -> Ticket: ...

    def update_state(self, ticket: Ticket, state: ProblemState, priority: int | None = None) -> Ticket:
        """Store the new state (and priority) without a comment."""
