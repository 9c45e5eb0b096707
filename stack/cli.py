"""``pathwatch stack``: up, down, status, logs, init."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Annotated, Optional

import typer

app = typer.Typer(
    help="Run pathwatch's services on this machine: Kafka, TimescaleDB, Flink (jars) and Superset.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

Home = Annotated[Optional[Path], typer.Option("--home", help="State directory (default: $PATHWATCH_HOME, else .pathwatch in the checkout).")]
ConfigFile = Annotated[Optional[Path], typer.Option("--config", help="Config file, TOML or YAML (default: pathwatch.toml in the state directory).")]
AsJson = Annotated[bool, typer.Option("--json", help="Print the status as JSON.")]

EXIT_FAILED = 1


def _console(stderr: bool = False):
    from rich.console import Console

    return Console(stderr=stderr, highlight=False, soft_wrap=True)


def _config(home: Optional[Path], config_file: Optional[Path]):
    from pathwatch.stack.config import ConfigError, resolve

    try:
        return resolve(home=home, config_file=config_file)
    except ConfigError as error:
        _console(stderr=True).print(f"[red]{error}[/red]", markup=True)
        raise typer.Exit(EXIT_FAILED) from None


def _fail(error: Exception) -> None:
    err = _console(stderr=True)
    for line in str(error).splitlines():
        err.print(f"[red]✗[/red] {line}")
    raise typer.Exit(EXIT_FAILED)


WithTickets = Annotated[Optional[bool], typer.Option("--with-tickets/--without-tickets", help="Also (or no longer) Request Tracker 5 and Alertmanager; remembered in the state directory for later commands (setting tickets_enabled, which the config file and environment override).", show_default=False)]


@app.command()
def up(home: Home = None, config_file: ConfigFile = None, as_json: AsJson = False, with_tickets: WithTickets = None) -> None:
    """Install what is missing, start every service, wait until ready, and show the status.

    The first run downloads Kafka and the Flink connectors (Maven), builds a Debian 13 root with
    TimescaleDB (debootstrap) and a Superset virtualenv: a few minutes and ~2 GB. Later runs
    reuse them and take seconds.
    """
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    from pathwatch.stack import manage
    from pathwatch.stack.component import StackError

    config = _config(home, config_file)
    if with_tickets is not None:
        import dataclasses

        from pathwatch.stack.config import remember_flags

        remember_flags(config.home, tickets_enabled=int(with_tickets))
        config = dataclasses.replace(config, tickets_enabled=int(with_tickets))
    err = _console(stderr=True)
    started = time.monotonic()
    with Progress(SpinnerColumn(), TextColumn("[bold]{task.fields[name]:<12}[/bold]"), TextColumn("{task.description}"),
                  TimeElapsedColumn(), console=err, transient=not err.is_terminal) as progress:
        tasks = {part.name: progress.add_task("waiting", name=part.name, total=1) for part in manage.components(config)}

        def report(name: str, message: str) -> None:
            done = message == "ready" or message.startswith("failed")
            shown = f"[red]{message}[/red]" if message.startswith("failed") else message
            progress.update(tasks[name], description=shown, completed=1 if done else 0)
            if not err.is_terminal:
                err.print(f"{name}: {message}", markup=False)

        try:
            current = manage.up(config, report)
        except StackError as error:
            _fail(error)
    err.print(f"stack up in {time.monotonic() - started:.1f} s (state in {config.home})")
    _show(current, as_json)


@app.command()
def down(home: Home = None, config_file: ConfigFile = None,
         wipe: Annotated[bool, typer.Option("--wipe", help="Also delete the data (Kafka logs, database, Superset metadata, RT tickets, Alertmanager state); installs are kept.")] = False) -> None:
    """Stop exactly the processes `stack up` started (by their pid files); keep the data unless --wipe."""
    from pathwatch.stack import jobs, manage
    from pathwatch.stack.component import StackError
    from pathwatch.stack.procs import ProcessError

    config = _config(home, config_file)
    err = _console(stderr=True)
    try:
        stopped = manage.down(config, wipe=wipe)
    except (StackError, ProcessError) as error:
        _fail(error)
    for name, record in stopped.items():
        err.print(f"{name}: " + (f"stopped pid {record.pid}" if record else "was not running"))
    if wipe:
        err.print(f"data removed from {config.home} (installs kept)")
    for job in jobs.running_jobs(config.home):
        err.print(f"[yellow]job {job.name} (pid {job.pid}) still runs: it was not started by `stack up`[/yellow]")


@app.command()
def status(home: Home = None, config_file: ConfigFile = None, as_json: AsJson = False) -> None:
    """Each component's state, endpoint and connection strings (DSNs, bootstrap servers, URLs, passwords)."""
    from pathwatch.stack import manage

    _show(manage.status(_config(home, config_file)), as_json)


def _show(current, as_json: bool) -> None:
    if as_json:
        sys.stdout.write(json.dumps(current.to_dict(), indent=2) + "\n")
        return
    from rich.table import Table

    colours = {"running": "green", "ready": "green", "external": "green", "stopped": "yellow",
               "not installed": "yellow", "failed": "red"}
    table = Table(title=f"pathwatch stack ({current.home})")
    for column in ("component", "state", "pid", "connect with"):
        table.add_column(column)
    for name, part in current.components.items():
        colour = colours.get(part.state, "white")
        table.add_row(name, f"[{colour}]{part.state}[/{colour}]", str(part.pid or ""), _connect_text(part))
    console = _console()
    console.print(table)
    for part in current.components.values():
        if part.error:
            console.print(f"[red]{part.error}[/red]")


def _connect_text(part) -> str:
    info = part.info
    lines = {
        "kafka": [f"bootstrap servers {info.get('bootstrap_servers')}"],
        "timescaledb": [f"{info.get('dsn')}", f"read-only: {info.get('dsn_readonly')}" if info.get("dsn_readonly") else "",
                        f"timescaledb {info.get('extension_version')} ({info.get('license')} license)" if info.get("license") else ""],
        "superset": [f"{info.get('url')}", f"admin {info.get('admin_user')} / {info.get('admin_password')}"],
        "rt": [f"{info.get('url')} queue {info.get('queue')}", f"root / {info.get('root_password')}" if info.get("root_password") else "",
               f"bot token in {info.get('token_file')}"],
        "alertmanager": [f"{info.get('url')}", f"notifies {info.get('receiver_url')}"],
        "flink": [f"web UI {info.get('web_ui')}",
                  f"{info.get('taskmanagers') or 0} TaskManager(s), {info.get('slots_available') or 0} of "
                  f"{info.get('slots_total') or 0} slots free" if info.get("taskmanagers") is not None else "",
                  f"{len(info.get('jobs') or [])} job(s) running",
                  _restarts_text(info.get("taskmanager_restarts"))]
                 + [f"{job['name']} {job['state'].lower()}" for job in info.get("jobs") or []],
    }.get(part.name, [])
    return "\n".join(line for line in lines if line)


def _restarts_text(restarts: dict | None) -> str:
    """The TaskManager supervisor's restarts, as `stack status` shows them.

    >>> _restarts_text({"restarts": 2, "last_exit_code": 1, "last_restart_at": "2026-11-26T15:23:17Z"})
    'TaskManager restarted 2× by its supervisor (last: exit status 1 at 2026-11-26T15:23:17Z)'
    """
    if not restarts:
        return ""
    return (f"TaskManager restarted {restarts['restarts']}× by its supervisor (last: exit status "
            f"{restarts['last_exit_code']} at {restarts['last_restart_at']})")


@app.command()
def logs(component: Annotated[str, typer.Argument(help="kafka, timescaledb, superset, flink, rt, alertmanager, or an install log: maven, debootstrap, superset-install.")],
         home: Home = None, config_file: ConfigFile = None,
         lines: Annotated[int, typer.Option("--lines", "-n", help="How many lines from the end.")] = 50,
         follow: Annotated[bool, typer.Option("--follow", "-f", help="Keep printing new lines (Ctrl-C stops).")] = False) -> None:
    """Print the end of a component's log file."""
    from pathwatch.stack.paths import Paths

    paths = Paths(_config(home, config_file).home)
    if component == "flink":
        found = sorted(paths.flink_logs.glob("*.log"), key=lambda path: path.stat().st_mtime) if paths.flink_logs.is_dir() else []
        log = found[-1] if found else paths.flink_logs / "(no job has logged yet)"
    else:
        log = paths.log(component)
    if not log.is_file():
        known = sorted(path.stem for path in paths.logs.glob("*.log")) if paths.logs.is_dir() else []
        _console(stderr=True).print(f"{component}: no log at {log}; logs so far: {', '.join(known) or 'none'}", markup=False)
        raise typer.Exit(EXIT_FAILED)
    with open(log, "rb") as handle:
        for line in _tail(handle, lines):
            sys.stdout.write(line)
        sys.stdout.flush()
        while follow:
            line = handle.readline().decode(errors="replace")
            if line:
                sys.stdout.write(line)
                sys.stdout.flush()
            else:
                time.sleep(0.5)


def _tail(handle, count: int) -> list[str]:
    """The last ``count`` lines of an open binary file (leaves it positioned at the end)."""
    handle.seek(0, 2)
    size = handle.tell()
    block, data = 8192, b""
    while size > 0 and data.count(b"\n") <= count:
        step = min(block, size)
        size -= step
        handle.seek(size)
        data = handle.read(step) + data
    handle.seek(0, 2)
    return [line.decode(errors="replace") + "\n" for line in data.splitlines()[-count:]] if count > 0 else []


@app.command()
def init(home: Home = None, config_file: ConfigFile = None,
         bootstrap: Annotated[Optional[str], typer.Option(help="Kafka bootstrap servers (default: the stack's).")] = None,
         database_admin_url: Annotated[Optional[str], typer.Option(envvar="PATHWATCH_DATABASE_ADMIN_URL", show_envvar=True, help="A superuser DSN of the TimescaleDB to set up (default: the local stack's); it holds a password, so prefer the environment variable to the option (a command line is visible in ps).")] = None,
         skip_database: Annotated[bool, typer.Option("--skip-database", help="Only create the topics.")] = False) -> None:
    """Create pathwatch's Kafka topics and the database, roles and extension (idempotent).

    `stack up` does this itself; docker-compose's init service runs it against the containers.
    Passwords come from PATHWATCH_DB_PASSWORD and PATHWATCH_DB_READONLY_PASSWORD, else the
    state directory's generated ones.
    """
    from pathwatch.stack import kafka
    from pathwatch.stack.component import StackError
    from pathwatch.stack.timescale import TimescaleDB

    config = _config(home, config_file)
    err = _console(stderr=True)
    servers = bootstrap or kafka.Kafka(config).bootstrap
    try:
        created = kafka.create_topics(servers, kafka.topics(config), config=config)
        err.print(f"kafka {servers}: created {', '.join(created) or 'nothing (all topics exist)'}", markup=False)
        if not skip_database:
            database = TimescaleDB(config)
            if database.external and database_admin_url is None:
                raise StackError("timescaledb: PATHWATCH_DATABASE_URL names an existing database; "
                                 "set PATHWATCH_DATABASE_ADMIN_URL (or give --database-admin-url) to set it up, "
                                 "or --skip-database")
            database.bootstrap(database_admin_url)
            err.print(f"timescaledb: database {config.database_name}, roles {config.database_user} and "
                      f"{config.database_readonly_user}, extension timescaledb: in place", markup=False)
    except StackError as error:
        _fail(error)
    except Exception as error:  # psycopg or Kafka client errors: say which and why, without a traceback
        _fail(StackError(f"init: {type(error).__name__}: {str(error).strip()}"))
