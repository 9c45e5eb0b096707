"""``pathwatch db migrate | hosts | retention``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

app = typer.Typer(help="The pipeline's TimescaleDB: schema migrations, the mesh's hosts, retention.", no_args_is_help=True)


def _url(url: str | None) -> str:
    if url:
        return url
    from pathwatch import stack

    return stack.status().database_url


@app.command()
def migrate(
    url: Annotated[Optional[str], typer.Option("--url", envvar="PATHWATCH_DATABASE_URL", help="Database DSN (owner role); default: the stack's.")] = None,
) -> None:
    """Apply the numbered migrations in sql/ that are not applied yet (idempotent)."""
    from pathwatch.console import err_console
    from pathwatch.db.migrate import MigrationError, migrate as run

    err = err_console()
    try:
        applied = run(_url(url), report=lambda line: err.print(line, markup=False))
    except MigrationError as error:
        err.print(f"[red]error:[/red] {error}")
        raise typer.Exit(1) from None
    new = [a for a in applied if a.newly]
    err.print(f"database at migration {applied[-1].version:03d} ({len(new)} applied now, "
              f"{len(applied) - len(new)} already in place)", markup=False)


@app.command()
def hosts(
    mesh: Annotated[Path, typer.Argument(exists=True, dir_okay=False, help="A collector mesh YAML or a simulator mesh.json.")],
    url: Annotated[Optional[str], typer.Option("--url", envvar="PATHWATCH_DATABASE_URL", help="Database DSN (owner role); default: the stack's.")] = None,
) -> None:
    """Record each host of a mesh file with its site (the dashboards' site filter reads them)."""
    from pathwatch.db.hosts import read_hosts, upsert_hosts
    from pathwatch.collector.mesh_config import MeshError

    try:
        rows = read_hosts(mesh)
    except (MeshError, KeyError, ValueError) as error:
        typer.echo(f"error: {mesh}: {error}", err=True)
        raise typer.Exit(1) from None
    typer.echo(f"{upsert_hosts(_url(url), rows)} hosts recorded from {mesh}", err=True)


@app.command()
def retention(
    url: Annotated[Optional[str], typer.Option("--url", envvar="PATHWATCH_DATABASE_URL", help="Database DSN (owner role); default: the stack's.")] = None,
    keep: Annotated[Optional[list[str]], typer.Option("--keep", help="TABLE=DAYS to override a keep period (repeatable).")] = None,
    policies: Annotated[bool, typer.Option(help="Install TimescaleDB retention policies instead (licensed TimescaleDB only).")] = False,
) -> None:
    """Drop hypertable chunks older than each table's keep period (run it daily, e.g. from cron)."""
    from rich.console import Console
    from rich.table import Table

    from pathwatch.db.retention import DEFAULT_KEEP_DAYS, apply_retention

    overrides = {}
    for item in keep or []:
        table, _, days = item.partition("=")
        if table not in DEFAULT_KEEP_DAYS or not days.isdigit():
            raise typer.BadParameter(f"{item!r}: expected TABLE=DAYS with TABLE one of {', '.join(DEFAULT_KEEP_DAYS)}",
                                     param_hint="--keep")
        overrides[table] = int(days)
    try:
        outcomes = apply_retention(_url(url), overrides, policies)
    except RuntimeError as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(1) from None
    table = Table("table", "keep (days)", "chunks dropped" if not policies else "policy")
    for outcome in outcomes:
        table.add_row(outcome.table, str(outcome.keep_days), "installed" if outcome.policy else str(outcome.dropped_chunks))
    Console().print(table)
