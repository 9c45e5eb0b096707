"""A real Request Tracker 5 and Alertmanager for the ticket tests, started through the stack's
own components on free ports in a temporary state directory (no full stack, so no stack lock)."""

from __future__ import annotations

import socket
from dataclasses import dataclass

import pytest
import requests

from pathwatch.stack import manage
from pathwatch.stack.config import StackConfig, resolve
from pathwatch.stack.rt import RequestTracker
from pathwatch.tickets.backends.rt import RTBackend
from tests.conftest import require_tool


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class TicketStack:
    config: StackConfig

    @property
    def rt(self) -> RequestTracker:
        return RequestTracker(self.config)

    def backend(self) -> RTBackend:
        return RTBackend(self.rt.url, self.rt.token(), self.config.rt_queue)

    def history(self, number: str) -> list[dict]:
        """Ticket ``number``'s transactions (type, field, new value), oldest first."""
        items, page = [], 1
        while True:
            reply = requests.get(f"{self.rt.url}/REST/2.0/ticket/{number}/history",
                                 params={"fields": "Type,Field,NewValue", "per_page": 100, "page": page},
                                 headers={"Authorization": f"token {self.rt.token()}"}, timeout=30)
            reply.raise_for_status()
            found = reply.json()["items"]
            items += found
            if len(found) < 100:
                return items
            page += 1

    def get(self, number: str) -> dict:
        reply = requests.get(f"{self.rt.url}/REST/2.0/ticket/{number}",
                             headers={"Authorization": f"token {self.rt.token()}"}, timeout=30)
        reply.raise_for_status()
        return reply.json()


@pytest.fixture(scope="session")
def ticket_stack(tmp_path_factory):
    require_tool("/usr/share/request-tracker5/libexec/rt-server")
    require_tool("rt-setup-database-5")
    require_tool("prometheus-alertmanager")
    home = tmp_path_factory.mktemp("ticket-stack")
    environ = {"PATHWATCH_RT_PORT": str(free_port()), "PATHWATCH_ALERTMANAGER_PORT": str(free_port()),
               "PATHWATCH_ALERTMANAGER_RECEIVER_PORT": str(free_port()), "PATHWATCH_RT_BCRYPT_COST": "4",
               "PATHWATCH_ALERTMANAGER_GROUP_WAIT": "200ms", "PATHWATCH_ALERTMANAGER_GROUP_INTERVAL": "1s",
               "PATHWATCH_READY_TIMEOUT": "120"}
    config = resolve(home=home, environ=environ, file_values={})
    names = ("rt", "alertmanager")
    try:
        current = manage.up(config, names=names)
        assert current.ok, current.to_dict()
        yield TicketStack(config)
    finally:
        stopped = manage.down(config, names=names)
        for name, record in stopped.items():
            assert record is None or not record.alive(), f"{name} still runs"
