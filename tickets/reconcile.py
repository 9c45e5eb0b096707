"""Anomaly states in, ticket operations out: the state machine, driven through a Backend.

Per anomaly message (one state of one episode) :meth:`Reconciler.handle` finds the problem's
ticket (by key, from its cache or the backend), works out the ticket's next state and makes
at most one call that changes the ticket:

=================================================  ======================================
the anomaly                                         the ticket
=================================================  ======================================
is a member of an incident whose root has a ticket  handled on the root's ticket (one ticket per
                                                    incident, :mod:`pathwatch.models.incidents`);
                                                    a closed member joins it silently; a ticket it
                                                    had of its own is told and let go of it
                                                    (resolved when nothing else there is open)
opens, no ticket (or resolved beyond the window)    create (subject to quiet mode, rate limit)
opens, the ticket was resolved within the window    reopen, with a comment
opens on another path of an open problem            comment "also on …" (+ priority)
opens on a path where an open problem explains it   comment "related: …" on that problem's ticket
grows past the problem's worst severity             comment "worse on …" (+ priority)
closes while other paths are still affected         comment "recovered on …"
closes, the last open one                           resolve, with a comment
anything else that changes the stored state         silent state update
a state the ticket already holds, or an older one   nothing (a member's severity only rises,
                                                    and a closed member stays closed)
=================================================  ======================================

Every call carries the new state, so after a failure the whole message is simply handled
again: what already happened is found in the ticket and not repeated.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, replace
from typing import Any, Callable, Mapping

from pathwatch.contract.timefmt import parse_rfc3339
from pathwatch.tickets import body
from pathwatch.tickets.backends.base import Backend, BackendError, Member, ProblemState, Ticket
from pathwatch.models.incidents import path_of, problem_keys, related_kinds
from pathwatch.tickets.policy import Policy, RateLimiter, rank, site_of

log = logging.getLogger(__name__)

CREATE, COMMENT, RESOLVE, REOPEN, UPDATE = "create", "comment", "resolve", "reopen", "update"
SKIP = "skip"   # nothing done, with the reason in ``detail``


@dataclass(frozen=True)
class Outcome:
    """What one anomaly message did: the action, the problem key, the ticket (if any), why."""

    action: str
    anomaly_id: str
    key: str
    ticket: Ticket | None = None
    detail: str = ""

    @property
    def changed(self) -> bool:
        return self.action not in (SKIP,)


def _seconds(text: str) -> float:
    return parse_rfc3339(text).timestamp()


def merge(old: Member, new: Member) -> Member:
    """The later of two states of one anomaly: the higher severity, and closed once closed.

    >>> merge(Member("a>b", "major", True), Member("a>b", "warning", False))
    Member(path='a>b', severity='major', open=False)
    """
    severity = old.severity if rank(old.severity) >= rank(new.severity) else new.severity
    return Member(old.path, severity, old.open and new.open)


class Reconciler:
    """Keeps one backend's tickets in step with anomaly states (see the module's table)."""

    def __init__(self, backend: Backend, policy: Policy | None = None, superset_url: str | None = None,
                 clock: Callable[[], float] = time.time):
        self.backend = backend
        self.policy = policy or Policy()
        self.superset_url = superset_url
        self.clock = clock
        self.rate = RateLimiter(self.policy.rate_limit)
        self._tickets: dict[str, list[Ticket]] = {}

    def forget(self) -> None:
        """Drop the cached tickets (after an error, the backend's word is the truth)."""
        self._tickets.clear()

    def _find(self, key: str) -> list[Ticket]:
        if key not in self._tickets:
            self._tickets[key] = list(self.backend.tickets(key))
        return self._tickets[key]

    def _keep(self, ticket: Ticket) -> Ticket:
        """Cache a ticket as the backend returned it: in place, or first when it is new."""
        for key, cached in self._tickets.items():   # re-keyed: not under its old key any more
            if key != ticket.key:
                cached[:] = [t for t in cached if t.id != ticket.id]
        tickets = self._tickets.setdefault(ticket.key, [])
        ids = [t.id for t in tickets]
        if ticket.id in ids:
            tickets[ids.index(ticket.id)] = ticket
        else:
            tickets.insert(0, ticket)
        return ticket

    def _choose(self, anomaly: Mapping[str, Any]) -> tuple[str, Ticket | None]:
        """The problem key and its ticket: one that covers this anomaly; else an open one of its
        keys; else an open ticket on the same path of a kind that explains it or that it explains
        (a latency shift and the route change behind it); for a problem of either end's host, an
        open one of the same kind through either host (re-keyed to the shared host); else the
        first key's newest ticket (None if it never had one)."""
        candidates = problem_keys(anomaly)
        found = [(key, self._find(key)) for key in candidates]
        for key, tickets in found:
            for ticket in tickets:
                if anomaly["id"] in ticket.state.members:
                    return key, ticket
        for ticket in self.backend.holding(anomaly["id"]):   # e.g. joined a cause's ticket before a restart
            return ticket.key, self._keep(ticket)
        for key, tickets in found:
            if tickets and tickets[0].is_open:
                return key, tickets[0]
        if anomaly["end"] is not None:
            return found[0][0], (found[0][1][0] if found[0][1] else None)
        related = related_kinds(anomaly["kind"])
        if related:
            for ticket in self.backend.open_on_path(path_of(anomaly)):
                if ticket.key.split("|", 1)[0] in related:
                    return ticket.key, self._keep(ticket)
        if len(candidates) > 1:   # a host at either end: join an open problem through either host
            for host in (anomaly.get("source"), anomaly.get("destination")):
                for ticket in self.backend.open_on_host(host):
                    if ticket.key.split("|", 1)[0] == anomaly["kind"]:
                        return f"{anomaly['kind']}|host:{host}", self._keep(ticket)
        for key, tickets in found:   # a resolved ticket of any key may be reopened
            if tickets:
                return key, tickets[0]
        return found[0][0], None

    def handle(self, anomaly: Mapping[str, Any]) -> Outcome:
        """Apply one anomaly state (a dict of the anomaly contract) to its ticket."""
        try:
            return self._handle(anomaly)
        except BackendError:
            self.forget()
            raise

    def _root_ticket(self, a: Mapping[str, Any]) -> Ticket | None:
        """For a member of another anomaly's incident, the ticket holding that root (the incident's)."""
        incident = a.get("incident_id")
        if not incident or incident == a["id"]:
            return None
        return next(iter(self.backend.holding(incident)), None)

    def _release(self, a: Mapping[str, Any], root: Ticket) -> None:
        """A member handled on its incident's ticket ``root`` leaves any other ticket that holds it
        open (its own, from before the cause was known): closed there with a pointer to the
        incident's ticket, which is resolved when nothing else in it is open."""
        aid = a["id"]
        for ticket in self.backend.holding(aid):
            member = ticket.state.members.get(aid)
            if ticket.id == root.id or member is None or not member.open:
                continue
            members = {**ticket.state.members, aid: Member(member.path, member.severity, False)}
            state = ProblemState(members, ticket.state.cleared_at)
            text = (f"{a['kind'].replace('_', ' ')} on {member.path.replace('>', ' → ')} is part of a larger "
                    f"incident, followed on {root.reference}.")
            if not ticket.is_open:
                self._keep(self.backend.update_state(ticket, state))
            elif state.open_members:
                self._keep(self.backend.comment(ticket, text, state))
            else:
                self._keep(self.backend.resolve(ticket, text, replace(state, cleared_at=_seconds(a["start"]))))

    def _handle(self, a: Mapping[str, Any]) -> Outcome:
        root = self._root_ticket(a)
        if root is not None:             # a member: its root's ticket is the incident's
            self._release(a, root)
            key, ticket = root.key, self._keep(root)
        else:
            key, ticket = self._choose(a)
        aid, is_open, severity = a["id"], a["end"] is None, a["severity"]
        member = Member(path_of(a), severity, is_open)
        priority = self.policy.priority
        now = self.clock()
        quiet = self.policy.quiet_for(a, now)
        known = ticket is not None and aid in ticket.state.members
        if known:
            # A member's state only moves one way (severity up, open to closed), so an older state
            # read again (a replay, a restart from an earlier offset) changes nothing.
            member = merge(ticket.state.members[aid], member)
            if ticket.state.members[aid] == member:
                return Outcome(SKIP, aid, key, ticket, "already recorded")
        if not known:
            if not is_open and ticket is not None and a.get("incident_id") in ticket.state.members:
                # an episode its incident's cause adopted after it ended: recorded, nothing to say
                state = ProblemState({**ticket.state.members, aid: member}, ticket.state.cleared_at)
                return Outcome(UPDATE, aid, key, self._keep(self.backend.update_state(ticket, state)),
                               "closed member of the incident")
            if not is_open:
                return Outcome(SKIP, aid, key, ticket, "closed before it had a ticket")
            if not self.policy.wants(severity):
                return Outcome(SKIP, aid, key, ticket, f"severity {severity} is below {self.policy.min_severity}")
            if ticket is not None and ticket.is_open:
                return self._join(a, key, ticket, member, quiet)
            if quiet:
                return Outcome(SKIP, aid, key, ticket, "quiet mode")
            if ticket is not None and ticket.state.cleared_at is not None \
                    and _seconds(a["start"]) - ticket.state.cleared_at <= self.policy.reopen_window_s:
                state = ProblemState({**ticket.state.members, aid: member}, None)
                done = self.backend.reopen(ticket, body.reopened_text(a, self.superset_url), state, priority(severity))
                return Outcome(REOPEN, aid, key, self._keep(done))
            bucket = f"{a['kind']}|{site_of(a['source'], self.policy.sites) if a.get('source') else ''}"
            if not self.rate.allow(bucket, now):
                return Outcome(SKIP, aid, key, ticket, f"rate limit: {self.policy.rate_limit.max_new} new tickets "
                                                        f"per {self.policy.rate_limit.per_s:g} s for {bucket}")
            state = ProblemState({aid: member}, None)
            done = self.backend.create(key, body.subject(a, key), body.body(a, key, self.superset_url),
                                       priority(severity), state)
            return Outcome(CREATE, aid, key, self._keep(done))
        return self._update(a, key, ticket, member, quiet)

    def _join(self, a, key: str, ticket: Ticket, member: Member, quiet: bool) -> Outcome:
        """Another anomaly (usually another path) of an open problem (re-keyed if ``key`` differs)."""
        old = ticket.state
        if key != ticket.key:
            ticket = replace(ticket, key=key)
        state = ProblemState({**old.members, a["id"]: member}, None)
        new_path = member.path not in {m.path for m in old.open_members.values()}
        worse = old.worst is None or rank(member.severity) > rank(old.worst)
        related = a["kind"] != key.split("|", 1)[0]
        raise_to = self.policy.priority(state.worst) if worse else None
        if quiet or not (new_path or worse or related):
            done = self.backend.update_state(ticket, state, raise_to)
            return Outcome(UPDATE, a["id"], key, self._keep(done), "quiet mode" if quiet else "same path, not worse")
        text = body.related_comment(a, key.split("|", 1)[0], self.superset_url) if related else \
            body.grown_comment(a, state.open_paths, new_path, self.superset_url)
        done = self.backend.comment(ticket, text, state, raise_to)
        return Outcome(COMMENT, a["id"], key, self._keep(done), "related" if related else "new path" if new_path else "worse")

    def _update(self, a, key: str, ticket: Ticket, member: Member, quiet: bool) -> Outcome:
        """A new state of an anomaly the ticket already covers: grown, changed, or closed."""
        old = ticket.state
        members = {**old.members, a["id"]: member}
        if not member.open:
            still = ProblemState(members, None)
            if still.open_members:
                if quiet:
                    return Outcome(UPDATE, a["id"], key, self._keep(self.backend.update_state(ticket, still)), "quiet mode")
                done = self.backend.comment(ticket, body.recovered_comment(a, still.open_paths), still)
                return Outcome(COMMENT, a["id"], key, self._keep(done), "recovered")
            state = replace(still, cleared_at=_seconds(a["end"]))
            if not ticket.is_open:
                return Outcome(UPDATE, a["id"], key, self._keep(self.backend.update_state(ticket, state)), "already resolved")
            done = self.backend.resolve(ticket, body.resolved_text(a, state.paths), state)
            return Outcome(RESOLVE, a["id"], key, self._keep(done))
        state = ProblemState(members, None)
        worse = old.worst is None or rank(member.severity) > rank(old.worst)
        if worse and not quiet and ticket.is_open:
            done = self.backend.comment(ticket, body.grown_comment(a, state.open_paths, False, self.superset_url),
                                        state, self.policy.priority(member.severity))
            return Outcome(COMMENT, a["id"], key, self._keep(done), "worse")
        done = self.backend.update_state(ticket, state, self.policy.priority(state.worst) if worse else None)
        return Outcome(UPDATE, a["id"], key, self._keep(done), "changed, not worse")
