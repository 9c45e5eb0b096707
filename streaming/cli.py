"""``pathwatch pipeline start | stop | status``."""

from __future__ import annotations

import json
from typing import Annotated, Optional

import typer

app = typer.Typer(help="The streaming pipeline's Flink jobs (normalise, detect, store).", no_args_is_help=True)

_JOBS_HELP = "Jobs to act on (default: all of normalise, detect, store)."


FlinkAddress = Annotated[Optional[str], typer.Option(
    "--flink-address", metavar="HOST:PORT",
    help="REST address of the Flink cluster the jobs run on (default: the stack's own, or the setting flink.address).")]


def _settings(flink_address: str | None = None):
    from dataclasses import replace

    from pathwatch.streaming.settings import from_stack

    settings = from_stack()
    return replace(settings, flink_address=flink_address) if flink_address else settings


def _names(jobs: list[str] | None) -> tuple[str, ...]:
    from pathwatch.streaming.pipeline import JOBS

    for name in jobs or []:
        if name not in JOBS:
            raise typer.BadParameter(f"{name!r}: not a pipeline job; jobs: {', '.join(JOBS)}")
    return tuple(jobs) if jobs else JOBS


@app.command()
def start(
    jobs: Annotated[Optional[list[str]], typer.Argument(help=_JOBS_HELP)] = None,
    fresh: Annotated[bool, typer.Option(help="Forget the jobs' savepoints and checkpoints (start from the committed offsets).")] = False,
    flink_address: FlinkAddress = None,
) -> None:
    """Submit the jobs to the Flink cluster with Flink's client (each resumes from its newest
    savepoint or checkpoint); migrates the database first."""
    from pathwatch.console import err_console
    from pathwatch.db.migrate import migrate
    from pathwatch.streaming.pipeline import PipelineError, start as run

    err = err_console()
    settings = _settings(flink_address)
    migrate(settings.database_url, report=lambda line: err.print(line, markup=False))
    try:
        run(settings, _names(jobs), fresh=fresh, report=lambda line: err.print(line, markup=False))
    except PipelineError as error:
        err.print(f"error: {error}", style="red", markup=False)
        raise typer.Exit(1) from None


@app.command()
def stop(jobs: Annotated[Optional[list[str]], typer.Argument(help=_JOBS_HELP)] = None,
         flink_address: FlinkAddress = None) -> None:
    """Stop the jobs, each with a savepoint that the next start resumes from (cancelled if the savepoint fails)."""
    from pathwatch.console import err_console
    from pathwatch.streaming.pipeline import stop as run

    from pathwatch.streaming.pipeline import PipelineError

    err = err_console()
    try:
        stopped = run(_settings(flink_address), _names(jobs), report=lambda line: err.print(line, markup=False))
    except PipelineError as error:
        err.print(f"error: {error}", style="red", markup=False)
        raise typer.Exit(1) from None
    typer.echo(f"stopped: {', '.join(stopped) or 'nothing was running'}", err=True)


@app.command()
def status(as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
           flink_address: FlinkAddress = None) -> None:
    """Each job: its state in the Flink cluster, newest checkpoint, back-pressure, consumer lag
    (messages not yet processed)."""
    from rich.console import Console
    from rich.table import Table

    from pathwatch.streaming.pipeline import status as run

    settings = _settings(flink_address)
    jobs = run(settings, backpressure=True)
    if as_json:
        typer.echo(json.dumps([job.to_dict() for job in jobs], indent=2))
        return
    table = Table("job", "state", "Flink job", "lag", "back-pressure", "newest checkpoint",
                  title=f"pipeline on the Flink cluster at {settings.flink_address}")
    for job in jobs:
        state = f"[green]{job.state.lower()}[/green]" if job.running else "[yellow]stopped[/yellow]"
        table.add_row(job.name, state, job.flink_job_id or "", "" if job.lag is None else str(job.lag),
                      job.backpressure or "", job.checkpoint or "")
    console = Console()
    console.print(table)
    for job in jobs:
        if job.info.get("error"):
            console.print(f"[red]{job.name}: {job.info['error']}[/red]", markup=True, highlight=False)
