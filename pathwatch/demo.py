"""``pathwatch demo``: the whole pipeline on a built-in simulated mesh, unattended, in minutes.

Brings the stack up, migrates the database, starts the pipeline's jobs, simulates a mesh with
injected pathologies ending at the current hour (once per state directory: a second run shows
the same data again), records its hosts and sites, publishes it into the raw topic, waits until
every job has caught up, then prints what was found beside what was injected and where to look
(the Superset dashboards, imported by `stack up`).
"""

from __future__ import annotations

import json
import time
from datetime import datetime, timedelta, timezone
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.table import Table


DASHBOARD_SLUGS = ("mesh-overview", "anomalies", "path-explorer", "route-changes", "loss-trends", "daily-patterns")


@dataclass(frozen=True)
class DemoOptions:
    seed: int = 2026
    hosts: int = 7
    days: int = 21
    rate: float | None = None
    timeout_s: float = 1200.0
    tickets: bool = False        # also RT + Alertmanager, and tickets for what was found


def run_demo(options: DemoOptions, console: Console, err: Console) -> int:
    from pathwatch import stack
    from pathwatch.db.migrate import migrate
    from pathwatch.streaming import pipeline
    from pathwatch.streaming.settings import from_stack

    config = stack.resolve()
    if options.tickets:  # as `stack up --with-tickets`: remembered, so `stack status` keeps showing RT
        from dataclasses import replace

        from pathwatch.stack.config import remember_flags

        remember_flags(config.home, tickets_enabled=1)
        config = replace(config, tickets_enabled=1)
    err.rule("1/5 stack")
    stack.up(config, report=lambda part, line: err.print(f"  {part}: {line}", markup=False))
    settings = from_stack(config)
    err.rule("2/5 database")
    migrate(settings.database_url, report=lambda line: err.print(f"  {line}", markup=False))
    err.rule("3/5 pipeline jobs")
    pipeline.start(settings, report=lambda line: err.print(f"  {line}", markup=False))
    err.rule("4/5 simulated mesh → raw topic")
    from pathwatch.collector.publish import RawPublisher

    publisher = RawPublisher(settings.bootstrap, settings.topics["raw"])
    cluster = publisher.cluster_id()
    folder = demo_folder(Path(settings.home) / "demo", options, cluster)
    _simulate_and_publish(folder, options, publisher, cluster, err)
    from pathwatch.db.hosts import read_hosts, upsert_hosts

    upsert_hosts(settings.database_url, read_hosts(folder / "mesh.json"))
    err.rule("5/5 waiting for the pipeline to catch up")
    _wait_caught_up(settings, options.timeout_s, err)
    busiest = _report(folder, settings, console)
    if options.tickets:
        from pathwatch.tickets.catchup import catch_up, show

        err.rule("tickets: the anomalies topic → Request Tracker")
        handled = catch_up(config)
        err.print(f"  {handled} anomaly message(s) applied to tickets", markup=False)
        show(config, console)
    current = stack.status(config)
    user, password = current.superset_credentials
    console.print(f"\nDashboards: {current.superset_url}  (user {user}, password {password})", markup=False)
    for slug in DASHBOARD_SLUGS:
        console.print(f"  {current.superset_url}/superset/dashboard/{slug}/", markup=False)
    if busiest:
        from pathwatch.tickets.body import path_explorer_url

        console.print(f"  the path with the most anomalies ({busiest[0]} → {busiest[1]}) in the path explorer:\n  "
                      + path_explorer_url(current.superset_url, *busiest), markup=False, soft_wrap=True)
    console.print(f"Flink web UI (the jobs, their checkpoints and back-pressure): "
                  f"{current.components['flink'].info.get('web_ui')}", markup=False)
    console.print(f"Database (read-only): {current.database_url_readonly}", markup=False)
    console.print("Pipeline: `pathwatch pipeline status`; stop everything with `pathwatch pipeline stop && "
                  "pathwatch stack down`.", markup=False)
    return 0


def demo_folder(parent: Path, options: DemoOptions, cluster: str, now: datetime | None = None) -> Path:
    """The folder of this demo's mesh: the one already published to Kafka cluster ``cluster``,
    else one whose period ends at midnight (UTC) today, so that the dashboards' "last month"
    shows it. A folder published to another cluster (the stack was wiped since) is not reused.

    >>> import tempfile
    >>> parent = Path(tempfile.mkdtemp())
    >>> demo_folder(parent, DemoOptions(days=21), "c1", datetime(2026, 11, 22, 9, 30, tzinfo=timezone.utc)).name
    'seed-2026-7h-21d-from-2026-11-01'
    >>> (parent / "seed-2026-7h-21d-from-2026-10-01").mkdir()
    >>> mark_published(parent / "seed-2026-7h-21d-from-2026-10-01", 5, "c1")
    >>> demo_folder(parent, DemoOptions(days=21), "c1").name
    'seed-2026-7h-21d-from-2026-10-01'
    >>> demo_folder(parent, DemoOptions(days=21), "c2", datetime(2026, 11, 22, tzinfo=timezone.utc)).name
    'seed-2026-7h-21d-from-2026-11-01'
    """
    prefix = f"seed-{options.seed}-{options.hosts}h-{options.days}d-from-"
    earlier = sorted(parent.glob(prefix + "*")) if parent.exists() else []
    for folder in reversed(earlier):
        if published_to(folder) == cluster:
            return folder
    today = (now or datetime.now(timezone.utc)).replace(hour=0, minute=0, second=0, microsecond=0)
    return parent / f"{prefix}{(today - timedelta(days=options.days)):%Y-%m-%d}"


def mark_published(folder: Path, sent: int, cluster: str) -> None:
    """Record that ``sent`` envelopes of ``folder`` went to the Kafka cluster ``cluster``."""
    (folder / "published").write_text(json.dumps({"sent": sent, "kafka_cluster": cluster}) + "\n")


def published_to(folder: Path) -> str | None:
    """The Kafka cluster ``folder``'s mesh was published to, or None (never, or a marker from an
    older demo that did not say)."""
    try:
        return json.loads((folder / "published").read_text()).get("kafka_cluster")
    except (FileNotFoundError, ValueError, AttributeError):
        return None


def _simulate_and_publish(folder: Path, options: DemoOptions, publisher, cluster: str, err: Console) -> None:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

    from pathwatch.collector.publish import RateLimit, messages_of, publish_messages
    from pathwatch.ingest.reader import read_items
    from pathwatch.sim.command import run_simulate

    if published_to(folder) == cluster:
        err.print(f"  already published ({folder / 'published'}); showing the results again", markup=False)
        publisher.close()
        return
    if not (folder / "raw.jsonl").exists():
        start = folder.name.rsplit("-from-", 1)[1] + "T00:00:00Z"
        code = run_simulate(folder, seed=options.seed, hosts=options.hosts, days=options.days, start=start, console=err)
        if code != 0:
            raise RuntimeError(f"simulation into {folder} failed (exit {code})")
    items = list(read_items((folder / "raw.jsonl").read_bytes()))
    with Progress("  publishing", BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(), console=err,
                  transient=True) as progress:
        task = progress.add_task("publish", total=len(items))
        sent = publish_messages(publisher, messages_of(items, None), RateLimit(options.rate),
                                lambda n: progress.advance(task, n))
        publisher.close()
    mark_published(folder, sent, cluster)
    err.print(f"  published {sent:,} raw envelopes to {publisher.topic}", markup=False)


def _wait_caught_up(settings, timeout_s: float, err: Console) -> None:
    from pathwatch.streaming.pipeline import wait_caught_up

    with err.status("  ...") as spinner:
        # twice in a row: the store job has also written what detect emitted last
        wait_caught_up(settings, timeout_s, lambda lags: spinner.update(
            "  unprocessed messages: " + ", ".join(f"{n} {lag if lag is not None else '?'}" for n, lag in lags.items())))
    err.print("  caught up: every message processed", markup=False)


def _report(folder: Path, settings, console: Console) -> tuple[str, str] | None:
    """Print what was stored and the injected pathologies beside what was found; returns the path
    with the most anomalies (None without any)."""
    from collections import Counter

    import psycopg
    from psycopg import sql

    from pathwatch.evaluation.inputs import parse_anomaly, read_labels
    from pathwatch.evaluation.matching import match

    labels = read_labels(folder / "labels.jsonl")
    with psycopg.connect(settings.database_url) as connection:
        counts = {table: connection.execute(
            sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(table))).fetchone()[0]
                  for table in ("throughput", "latency", "trace", "dead_letters", "anomalies")}
        rows = connection.execute(
            "SELECT id, kind, source, destination, start, detected_at, end_time, severity, score, summary, evidence, "
            "detector_version, incident_id FROM anomalies ORDER BY start").fetchall()
        end = connection.execute("SELECT extract(epoch FROM max(time)) FROM latency").fetchone()[0]
    names = ("id", "kind", "source", "destination", "start", "detected_at", "end", "severity", "score", "summary",
             "evidence", "detector_version", "incident_id")
    anomalies = []
    for row in rows:
        value = dict(zip(names, row))
        value["id"], value["incident_id"] = str(value["id"]), str(value["incident_id"])
        for key in ("start", "detected_at", "end"):
            moment = value[key]
            value[key] = moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ") if moment else None
        anomalies.append(parse_anomaly(value))
    matching = match(labels, anomalies, end_of_data=float(end or 0))
    stored = Table(title="Stored in TimescaleDB")
    for name in counts:
        stored.add_column(name, justify="right")
    stored.add_row(*(f"{count:,}" for count in counts.values()))
    console.print(stored)
    table = Table(title="Injected pathologies and what pathwatch found")
    for column in ("injected", "path", "from", "found", "detected after", "summary"):
        table.add_column(column, overflow="fold")
    for i, label in enumerate(labels):
        hits = [anomalies[j] for j in matching.hits[i]]
        first = min(hits, key=lambda a: a.detected_at) if hits else None
        table.add_row(label.kind, f"{label.source} → {label.destination}", _when(label.start),
                      "[green]yes[/green]" if first else "[red]missed[/red]",
                      _delay(first.detected_at - label.start) if first else "",
                      first.summary if first else "")
    console.print(table)
    false = [a for j, a in enumerate(anomalies) if matching.status(j) == "false"]
    explained = sum(1 for j in range(len(anomalies)) if matching.status(j) == "explained")
    incidents = len({a.incident for a in anomalies})
    console.print(f"{len(anomalies)} anomalies in {incidents} incidents: {len(anomalies) - len(false) - explained} match an injected "
                  f"pathology, {explained} are its consequences (e.g. a latency shift from a route change), "
                  f"{len(false)} unexplained.", markup=False)
    busiest = Counter((a.source, a.destination) for a in anomalies).most_common(1)
    return busiest[0][0] if busiest else None


def _when(t: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.gmtime(t))


def _delay(seconds: float) -> str:
    from pathwatch.evaluation.metrics import human_duration

    return human_duration(max(0.0, seconds)) or ""
