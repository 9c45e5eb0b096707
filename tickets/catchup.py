"""Tickets for what the pipeline found so far: read the anomalies topic up to its end, keep the
tickets in step, and show them (``pathwatch demo --with-tickets``)."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table


def catch_up(config, idle_exit_s: float = 10.0, policy_file=None) -> int:
    """Apply what the anomalies topic holds (in event-time order) to the stack's RT, then commit."""
    from pathwatch.stack.kafka import Kafka, topic_names
    from pathwatch.stack.rt import RequestTracker
    from pathwatch.stack.superset import Superset
    from pathwatch.stack.timescale import TimescaleDB
    from pathwatch.tickets import policy
    from pathwatch.tickets.backends.rt import RTBackend
    from pathwatch.tickets.reconcile import Reconciler
    from pathwatch.tickets.service import Handler, TicketTable, replay

    import hashlib

    rt = RequestTracker(config)
    token = rt.token()
    backend = RTBackend(rt.url, token, config.rt_queue)
    handler = Handler(Reconciler(backend, policy.load(policy_file), Superset(config).url),
                      dead_letters=lambda letter: None, record=TicketTable(TimescaleDB(config).url, backend.name))
    # One consumer group per RT database (its token is made with it): a fresh RT reads the topic
    # from the start instead of inheriting offsets committed for tickets it does not have.
    group = "pathwatch-tickets-demo-" + hashlib.sha256(token.encode()).hexdigest()[:12]
    return replay(handler, Kafka(config).bootstrap, topic_names(config), group, idle_exit_s, config)


def show(config, console: Console) -> None:
    """A table of pathwatch's tickets in RT: reference, status, paths, subject, and where to open them."""
    from pathwatch.stack.rt import RequestTracker
    from pathwatch.tickets.backends.rt import RTBackend

    rt = RequestTracker(config)
    backend = RTBackend(rt.url, rt.token(), config.rt_queue)
    table = Table(title=f"Tickets in Request Tracker ({rt.url}, queue {config.rt_queue})")
    for column in ("ticket", "status", "paths", "subject"):
        table.add_column(column, overflow="fold")
    for item in backend.all():
        table.add_row(item["reference"], item["status"], str(item["paths"]), escape(item["subject"] or ""))
    console.print(table)
    console.print(f"RT: {rt.url}  (user root, password {rt.root_password()}); tickets: "
                  f"{rt.url}/Search/Results.html?Query=Queue%3D%27{config.rt_queue}%27", markup=False)
