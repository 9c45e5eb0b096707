"""``pathwatch dashboards import | export``: the Superset asset bundle in dashboards/bundle/."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

app = typer.Typer(help="Superset dashboards as code: import the bundle in dashboards/bundle/, export it back.",
                  no_args_is_help=True)

BundleOption = Annotated[Optional[Path], typer.Option(
    "--bundle", file_okay=False, help="The bundle folder (default: the one shipped with pathwatch).")]
UrlOption = Annotated[Optional[str], typer.Option(
    "--superset-url", envvar="PATHWATCH_SUPERSET_URL", help="Superset's URL; default: the stack's.")]
UserOption = Annotated[Optional[str], typer.Option(
    "--user", envvar="PATHWATCH_SUPERSET_USER", help="Superset admin user; default: the stack's.")]
DsnOption = Annotated[Optional[str], typer.Option(
    "--database-url", envvar="PATHWATCH_DATABASE_URL_READONLY",
    help="DSN Superset should query with (the read-only role); default: the stack's.")]


def _target(url: str | None, user: str | None, database_url: str | None):
    """The stack's facts, each overridable; the admin password only from the environment or the stack."""
    import os

    from pathwatch.dashboards.deploy import Target

    password = os.environ.get("PATHWATCH_SUPERSET_PASSWORD")
    if not (url and user and password and database_url):
        from pathwatch import stack

        current = stack.status()
        stack_user, stack_password = current.superset_credentials
        url, user = url or current.superset_url, user or stack_user
        password = password or stack_password
        database_url = database_url or current.database_url_readonly or current.database_url
    return Target(url, user, password, database_url)


def _fail(message: str) -> None:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(1)


@app.command("import")
def import_(bundle: BundleOption = None, superset_url: UrlOption = None, user: UserOption = None,
            database_url: DsnOption = None) -> None:
    """Import every database, dataset, chart and dashboard of the bundle, overwriting what is there.

    `pathwatch stack up` and `pathwatch demo` run this; run it yourself after editing the YAML.
    The admin password is $PATHWATCH_SUPERSET_PASSWORD or the stack's (see `pathwatch stack status`).
    """
    from pathwatch.dashboards.bundle import BUNDLE, BundleError
    from pathwatch.dashboards.client import SupersetError
    from pathwatch.dashboards.deploy import import_bundle

    target = _target(superset_url, user, database_url)
    try:
        result = import_bundle(target, bundle or BUNDLE)
    except (BundleError, SupersetError, OSError) as error:
        _fail(str(error))
    typer.echo(f"imported {result.dashboards} dashboards, {result.charts} charts, {result.datasets} datasets "
               f"and {result.databases} database into {target.superset_url}", err=True)


@app.command()
def export(bundle: BundleOption = None, superset_url: UrlOption = None, user: UserOption = None,
           database_url: DsnOption = None,
           check: Annotated[bool, typer.Option(help="Write nothing; exit 1 if Superset differs from the bundle.")] = False,
           ) -> None:
    """Export the bundle's database and everything on it from Superset back into the YAML files.

    Edit charts in Superset's UI, then export to keep the edits in the repository.
    """
    from pathwatch.dashboards.bundle import BUNDLE, BundleError
    from pathwatch.dashboards.client import SupersetError
    from pathwatch.dashboards.deploy import export_bundle

    target = _target(superset_url, user, database_url)
    try:
        changed = export_bundle(target, bundle or BUNDLE, write=not check)
    except (BundleError, SupersetError, OSError) as error:
        _fail(str(error))
    for path in changed:
        typer.echo(f"{'differs' if check else 'updated'}: {path}")
    typer.echo(f"{len(changed)} file(s) {'differ' if check else 'changed'}", err=True)
    if check and changed:
        raise typer.Exit(1)
