"""``pathwatch pipeline start | stop | status``."""

from __future__ import annotations

import json
from typing import Annotated, Optional

import typer

app = typer.Typer(help="The streaming pipeline's Flink jobs (normalise, detect, store).", no_args_is_help=True)

_JOBS_HELP = "Jobs to act on (default: all of normalise, detect, store)."


def _settings():
    from pathwatch.streaming.settings import from_stack

    return from_stack()


def _names(jobs: list[str] | None) -> tuple[str, ...]:
    from pathwatch.streaming.pipeline import JOBS

    for name in jobs or []:
        if name not in JOBS:
            raise typer.BadParameter(f"{name!r}: not a pipeline job; jobs: {', '.join(JOBS)}")
    return tuple(jobs) if jobs else JOBS


@app.command()
def start(
    jobs: Annotated[Optional[list[str]], typer.Argument(help=_JOBS_HELP)] = None,
    fresh: Annotated[bool, typer.Option(help="Forget the jobs' checkpoints (start from the committed offsets).")] = False,
) -> None:
    """Start the jobs (each resumes from its newest checkpoint); migrates the database first."""
    from pathwatch.console import err_console
    from pathwatch.db.migrate import migrate
    from pathwatch.streaming.pipeline import PipelineError, start as run

    err = err_console()
    settings = _settings()
    migrate(settings.database_url, report=lambda line: err.print(line, markup=False))
    try:
        run(settings, _names(jobs), fresh=fresh, report=lambda line: err.print(line, markup=False))
    except PipelineError as error:
        err.print(f"[red]error:[/red] {error}", markup=False)
        raise typer.Exit(1) from None


@app.command()
def stop(jobs: Annotated[Optional[list[str]], typer.Argument(help=_JOBS_HELP)] = None) -> None:
    """Stop the jobs (SIGTERM, then SIGKILL after 30 s); their checkpoints are kept for the next start."""
    from pathwatch.streaming.pipeline import stop as run

    stopped = run(_settings(), _names(jobs))
    typer.echo(f"stopped: {', '.join(stopped) or 'nothing was running'}", err=True)


@app.command()
def status(as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False) -> None:
    """Each job: running or not, pid, newest checkpoint, consumer lag (messages not yet processed)."""
    from rich.console import Console
    from rich.table import Table

    from pathwatch.streaming.pipeline import status as run

    jobs = run(_settings())
    if as_json:
        typer.echo(json.dumps([job.to_dict() for job in jobs], indent=2))
        return
    table = Table("job", "state", "pid", "lag", "newest checkpoint")
    for job in jobs:
        table.add_row(job.name, "[green]running[/green]" if job.running else "stopped", str(job.pid or ""),
                      "" if job.lag is None else str(job.lag), job.checkpoint or "")
    Console().print(table)
