"""The ``pathwatch`` command line."""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.table import Table

from pathwatch import __version__
from pathwatch.ingest.reader import DEFAULT_LIMITS

app = typer.Typer(
    name="pathwatch",
    help="Streaming analytics and anomaly detection for perfSONAR-style network measurements.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

from pathwatch.stack.cli import app as stack_app  # noqa: E402  (the `stack` sub-commands)

app.add_typer(stack_app, name="stack")

from pathwatch.db.cli import app as db_app  # noqa: E402
from pathwatch.streaming.cli import app as pipeline_app  # noqa: E402

from pathwatch.collector.publish_cli import publish as _publish  # noqa: E402

app.add_typer(db_app, name="db")
app.command(name="publish")(_publish)

from pathwatch.collector.collect_cli import register as _register_collect  # noqa: E402

_register_collect(app)
app.add_typer(pipeline_app, name="pipeline")

from pathwatch.dashboards.cli import app as dashboards_app  # noqa: E402

app.add_typer(dashboards_app, name="dashboards")

from pathwatch.tickets.cli import app as tickets_app  # noqa: E402

app.add_typer(tickets_app, name="tickets")

from pathwatch.notebooks.cli import notebook as _notebook  # noqa: E402

app.command(name="notebook")(_notebook)

from pathwatch.lab.cli import app as netlab_app  # noqa: E402

app.add_typer(netlab_app, name="lab")

EXIT_REJECTED = 2
EXIT_INTERNAL = 3


def _err() -> Console:
    from pathwatch.console import err_console

    return err_console()


def _describe(origin: str, location: str, field: str | None, reason: str) -> str:
    from pathwatch.console import describe_reject

    return describe_reject(origin, location, field, reason)


@app.command()
def parse(
    inputs: Annotated[list[str], typer.Argument(help="Files of raw envelopes or bare tool output; - reads standard input.")],
    format: Annotated[Optional[str], typer.Option("--format", "-f", help="Format of bare (unwrapped) inputs, instead of detecting it; envelopes name their own.")] = None,
    source: Annotated[Optional[str], typer.Option(help="Source host for bare inputs whose output does not name it.")] = None,
    destination: Annotated[Optional[str], typer.Option(help="Destination host for bare inputs that do not name it.")] = None,
    collected_at: Annotated[Optional[str], typer.Option(help="RFC 3339 collection time for bare inputs (default: the file's mtime).")] = None,
    keep_going: Annotated[bool, typer.Option("--keep-going", "-k", help="Parse the rest after a rejected input.")] = False,
    summary: Annotated[bool, typer.Option(help="Print a table of records and rejects per format on standard error, and how the items read add up.")] = False,
    max_line_bytes: Annotated[int, typer.Option(min=1, help="Longest line (or whole input that is not JSON Lines) read; longer ones are rejected unread.")] = DEFAULT_LIMITS.max_line_bytes,
    max_depth: Annotated[int, typer.Option(min=1, help="Deepest JSON nesting accepted; deeper input is rejected.")] = DEFAULT_LIMITS.max_depth,
) -> None:
    """Print canonical records as JSON Lines on standard output.

    JSON Lines are read one line at a time, so memory follows the longest line, not the file.
    Each rejected input gets one line on standard error naming the file, line, field and
    reason. Exit status: 0 when everything parsed, 2 when anything was rejected (the first
    rejection stops the run unless --keep-going), 3 on an internal error (a pathwatch bug).
    """
    from pathwatch.contract import plain, timefmt
    from pathwatch.ingest import registry
    from pathwatch.ingest.files import parse_paths
    from pathwatch.ingest.parse import Defaults
    from pathwatch.ingest.reader import Limits

    err = _err()
    if format is not None and format not in registry.formats():
        err.print(f"--format: unknown format {format!r}; known: {', '.join(registry.formats())}")
        raise typer.Exit(EXIT_REJECTED)
    if collected_at is not None:
        try:
            collected_at = timefmt.normalize(collected_at)
        except ValueError as error:
            err.print(f"--collected-at: not an RFC 3339 time with zone: {error}")
            raise typer.Exit(EXIT_REJECTED) from None
    defaults = Defaults(format, source, destination, collected_at)
    out = sys.stdout.buffer
    records: Counter = Counter()
    rejected: Counter = Counter()
    items = Counter()  # "records", "empty" (no measurement in it), "rejected": they add up to the items read
    progress = _progress(err, inputs)
    try:
        for located in parse_paths(inputs, defaults, as_dicts=True, limits=Limits(max_line_bytes, max_depth)):
            outcome = located.outcome
            if progress is not None:
                progress.advance(progress.task_ids[0], len(outcome.item.raw) + 1)
            items["rejected" if outcome.error is not None else "records" if outcome.records else "empty"] += 1
            if outcome.error is not None:
                rejected[outcome.format or "?"] += 1
                err.print(_describe(located.origin, outcome.item.location, outcome.error.field, outcome.error.reason), markup=False)
                if not keep_going:
                    break
                continue
            for record in outcome.records:  # lean dicts: the bytes model_dump_json() would write
                out.write(plain.dumps(record) + b"\n")
                records[(outcome.format, record["kind"])] += 1
    except BrokenPipeError:
        sys.stderr.close()
        raise typer.Exit(0) from None
    except Exception as error:  # a parser bug, not bad input: say so in one line, no traceback
        err.print(f"internal error: {type(error).__name__}: {error} (a pathwatch bug; please report it with the input)", markup=False)
        raise typer.Exit(EXIT_INTERNAL) from None
    finally:
        if progress is not None:
            progress.stop()
    out.flush()
    if summary:
        _summary_table(err, records, rejected)
        err.print(_items_line(items), markup=False)
    if rejected:
        raise typer.Exit(EXIT_REJECTED)


def _progress(err: Console, inputs: list[str]):
    from pathwatch.console import bytes_progress

    return bytes_progress(err, inputs)


def _items_line(items: Counter) -> str:
    """How the items read add up: each gave records, held no measurement, or was rejected.

    >>> _items_line(Counter(records=3, rejected=1))
    '4 items read: 3 gave records, 0 held no measurement, 1 rejected'
    """
    return (f"{sum(items.values())} items read: {items['records']} gave records, "
            f"{items['empty']} held no measurement, {items['rejected']} rejected")


def _summary_table(err: Console, records: Counter, rejected: Counter) -> None:
    table = Table(title="parsed")
    for column in ("format", "kind", "records"):
        table.add_column(column, justify="right" if column == "records" else "left")
    for (fmt, kind), count in sorted(records.items()):
        table.add_row(fmt, kind, str(count))
    for fmt, count in sorted(rejected.items()):
        table.add_row(fmt, "[red]rejected[/red]", str(count))
    err.print(table)


@app.command()
def formats(
    example: Annotated[Optional[str], typer.Option(help="Print the bundled example envelopes of this format.")] = None,
) -> None:
    """List the input formats pathwatch reads, each with an example."""
    from pathwatch.ingest import registry
    from pathwatch.ingest.examples import example_path

    known = registry.formats()
    if example is not None:
        if example not in known:
            _err().print(f"--example: unknown format {example!r}; known: {', '.join(known)}")
            raise typer.Exit(EXIT_REJECTED)
        sys.stdout.write(example_path(known[example]).read_text())
        return
    table = Table(title="input formats (wrap payloads in {format, source, destination, collected_at, payload})")
    table.add_column("format", style="bold")
    table.add_column("payload")
    table.add_column("what it is")
    table.add_column("example")
    for fmt in known.values():
        table.add_row(fmt.name, fmt.payload, fmt.summary, f"pathwatch formats --example {fmt.name}")
    Console().print(table)


@app.command()
def schema(
    write: Annotated[bool, typer.Option(help="Regenerate the committed schema files from the record types.")] = False,
) -> None:
    """Print the JSON Schemas of the raw envelope and the canonical records."""
    from pathwatch.contract import schemas

    generated = schemas.generate()
    if write:
        for path in schemas.write(generated):
            _err().print(f"wrote {path}")
        return
    sys.stdout.write(json.dumps(generated, indent=2) + "\n")


@app.command()
def demo(
    seed: Annotated[int, typer.Option(help="Seed of the simulated mesh.")] = 2026,
    hosts: Annotated[int, typer.Option(min=3, help="Hosts in the simulated full mesh.")] = 7,
    days: Annotated[int, typer.Option(min=4, help="Days of simulated measurements.")] = 21,
    rate: Annotated[Optional[float], typer.Option(help="Publish at most this many raw messages per second (default: as fast as possible).")] = None,
    timeout: Annotated[float, typer.Option(help="Seconds to wait for the pipeline to catch up.")] = 1200,
    with_tickets: Annotated[bool, typer.Option("--with-tickets", help="Also start Request Tracker 5 and Alertmanager, and open tickets for what was found.")] = False,
) -> None:
    """The main job: stack up, migrate, start the pipeline, stream a simulated mesh with injected
    pathologies through it, and print what was found beside what was injected, and where to look.

    Unattended and idempotent: a second run reuses the stack, the jobs and the published data.
    """
    from pathwatch.demo import DemoOptions, run_demo

    try:
        out = Console() if Console().is_terminal else Console(width=160)  # tables stay readable in logs
        code = run_demo(DemoOptions(seed, hosts, days, rate, timeout, with_tickets), out, _err())
    except RuntimeError as error:
        _err().print(f"[red]demo failed:[/red] {error}")
        raise typer.Exit(1) from None
    raise typer.Exit(code)


@app.command()
def examples() -> None:
    """Parse the bundled real output of every format and show the records it gives."""
    from pathwatch.ingest import registry
    from pathwatch.ingest.examples import example_path
    from pathwatch.ingest.files import parse_paths

    known = registry.formats()
    table = Table(title="pathwatch: bundled real tool outputs → canonical records")
    for column in ("format", "source → destination", "kind", "time", "headline"):
        table.add_column(column)
    rejected = 0
    for located in parse_paths([str(example_path(fmt)) for fmt in known.values()]):
        if located.outcome.error is not None:
            rejected += 1
            _err().print(_describe(Path(located.origin).name, located.outcome.item.location,
                                   located.outcome.error.field, located.outcome.error.reason), markup=False)
            continue
        for record in located.outcome.records:
            table.add_row(located.outcome.format, f"{record.source} → {record.destination}", record.kind,
                          record.time, _headline(record))
    Console().print(table)
    if rejected:
        raise typer.Exit(EXIT_REJECTED)


def _headline(record) -> str:
    if not record.succeeded:
        return f"[red]failed[/red]: {record.error}"
    if record.kind == "throughput":
        retrans = f", {record.retransmits} retransmits" if record.retransmits is not None else ""
        return f"{(record.throughput_bps or 0) / 1e6:,.1f} Mb/s {record.protocol}{retrans}"
    if record.kind == "latency":
        loss = f"{record.loss_ratio:.1%} loss" if record.loss_ratio is not None else "loss ?"
        median = f"{record.delay_median_ms:.3f} ms" if record.delay_median_ms is not None else "? ms"
        return f"{'one-way' if record.one_way else 'rtt'} median {median}, {loss}"
    reached = {True: "reached", False: "[yellow]not reached[/yellow]", None: "reach unknown"}[record.reached]
    pmtu = f", pmtu {record.pmtu_bytes}" if record.pmtu_bytes else ""
    return f"{record.hop_count} hops, {reached}, path {record.path_id[:8]}{pmtu}"


@app.command()
def detect(
    inputs: Annotated[list[str], typer.Argument(help="Files of raw envelopes or bare tool output; - reads standard input.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Where to write the anomalies (JSON Lines).")],
    format: Annotated[Optional[str], typer.Option("--format", "-f", help="Format of bare (unwrapped) inputs, instead of detecting it.")] = None,
    config: Annotated[Optional[Path], typer.Option(help="Detector configuration file (YAML or JSON): enabled detectors and parameters.")] = None,
    until: Annotated[Optional[str], typer.Option(help="RFC 3339 end of the data for silence checks (default: the latest record's time).")] = None,
    vetoed: Annotated[Optional[Path], typer.Option(help="Also write every candidate change a named veto held back or dismissed (JSON Lines: path, veto, verdict, start, at, baseline, level): why something did not alarm.")] = None,
) -> None:
    """Run every detector over the inputs in event-time order per path and write the anomalies.

    Rejected inputs are reported on standard error (file, line, field, reason) and counted;
    the run goes on. Exit status: 0 when everything parsed, 2 when anything was rejected.
    """
    from pathwatch.detect import run_detect

    raise typer.Exit(run_detect(inputs, out, format=format, config=config, until=until, console=_err(), vetoed=vetoed))


@app.command()
def simulate(
    out: Annotated[Path, typer.Option("--out", "-o", help="Directory to write raw.jsonl, labels.jsonl and mesh.json into.")],
    seed: Annotated[int, typer.Option(help="Random seed: the same seed gives the same files.")] = 1,
    hosts: Annotated[int, typer.Option(min=3, help="Number of hosts in the full mesh.")] = 7,
    days: Annotated[int, typer.Option(min=4, help="Days of measurements.")] = 21,
    start: Annotated[Optional[str], typer.Option(help="RFC 3339 start of the simulated period (default: a fixed date).")] = None,
    cadence: Annotated[Optional[list[str]], typer.Option(help="NAME=SECONDS: how often a test runs, e.g. throughput_s=21600 (names: latency_s, latency_packets, throughput_s, throughput_jitter_s, throughput_run_s, trace_s, tracepath_s).")] = None,
    benign: Annotated[bool, typer.Option("--benign/--no-benign", help="The benign behaviour catalogue (busy-hour standing queues, partly answering and slow routers, ICMP rate limiting, asymmetric routes, NTP corrections, reboots, loaded hosts, cross-traffic, skipped runs; sim/benign.py) and its untuned host. --no-benign: the meshes of before the catalogue.")] = True,
    benign_only: Annotated[bool, typer.Option("--benign-only", help="No pathology at all, only the benign catalogue: no labels, every alarm is false.")] = False,
) -> None:
    """Write a simulated measurement mesh with injected pathologies, in the tools' real formats, and its labels."""
    from pathwatch.sim.command import run_simulate

    raise typer.Exit(run_simulate(out, seed=seed, hosts=hosts, days=days, start=start, console=_err(),
                                  cadences=cadence or (), benign=benign, benign_only=benign_only))


@app.command()
def evaluate(
    labels: Annotated[Path, typer.Option(help="labels.jsonl: {kind, source, destination, start, end} per injected pathology.")],
    anomalies: Annotated[Path, typer.Option(help="anomalies.jsonl written by `pathwatch detect`.")],
    raw: Annotated[Optional[list[Path]], typer.Option(help="The raw input the anomalies came from: runs the WLCG/OSG baseline on it and draws plots.")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print the report as JSON instead of tables.")] = False,
    plots: Annotated[Optional[Path], typer.Option(help="Directory for one PNG per labelled case and per false alarm, with an index.md (needs --raw).")] = None,
) -> None:
    """Score anomalies against labels per kind (precision, recall, F1, delay, false alarms per 100 path-days), beside the WLCG/OSG baseline."""
    from pathwatch.evaluation.command import run_evaluate

    raise typer.Exit(run_evaluate(labels, anomalies, raw=raw or [], as_json=json_out, plots=plots, console=_err()))


@app.command()
def version() -> None:
    """Print pathwatch's version and the record contract's schema version."""
    from pathwatch.contract.records import SCHEMA_VERSION

    typer.echo(f"pathwatch {__version__} (record schema v{SCHEMA_VERSION})")


def main() -> None:
    app()
