"""Bringing the whole stack up and down, and what ``status`` reports (also as a Python object)."""

from __future__ import annotations

import contextlib
import fcntl
import shutil
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

from pathwatch.stack import procs
from pathwatch.stack.component import Component, ComponentStatus, StackError
from pathwatch.stack.config import StackConfig, resolve
from pathwatch.stack.flink import Flink
from pathwatch.stack.kafka import Kafka
from pathwatch.stack.paths import Paths
from pathwatch.stack.superset import Superset
from pathwatch.stack.timescale import TimescaleDB
from pathwatch.stack.alertmanager import Alertmanager
from pathwatch.stack.rt import RequestTracker

# Start order; after_ready runs in this order too (Superset registers the database).
COMPONENTS: tuple[type[Component], ...] = (Kafka, TimescaleDB, Flink, Superset)
NAMES = tuple(kind.name for kind in COMPONENTS)
# Only with tickets enabled (`up --with-tickets`, setting tickets_enabled): RT and Alertmanager.
TICKET_COMPONENTS: tuple[type[Component], ...] = (RequestTracker, Alertmanager)
ALL_NAMES = NAMES + tuple(kind.name for kind in TICKET_COMPONENTS)

# Progress: (component name, what it is doing now).
Report = Callable[[str, str], None]


@dataclass
class StackStatus:
    """Every component's status, plus the connection facts later code needs."""

    home: str
    components: dict[str, ComponentStatus]

    @property
    def ok(self) -> bool:
        return all(component.ok for component in self.components.values())

    def _info(self, component: str, key: str) -> Any:
        return self.components[component].info.get(key)

    @property
    def kafka_bootstrap(self) -> str:
        return self._info("kafka", "bootstrap_servers")

    @property
    def database_url(self) -> str:
        return self._info("timescaledb", "dsn")

    @property
    def database_url_readonly(self) -> str | None:
        return self._info("timescaledb", "dsn_readonly")

    @property
    def superset_url(self) -> str:
        return self._info("superset", "url")

    @property
    def superset_credentials(self) -> tuple[str, str]:
        return self._info("superset", "admin_user"), self._info("superset", "admin_password")

    @property
    def flink_jobs(self) -> list[dict]:
        return self._info("flink", "jobs") or []

    def to_dict(self) -> dict[str, Any]:
        return {"home": self.home, "ok": self.ok,
                "components": {name: component.to_dict() for name, component in self.components.items()}}


def components(config: StackConfig, names: tuple[str, ...] | None = None) -> list[Component]:
    """The stack's components (with RT and Alertmanager when tickets are enabled, or running),
    or only those named."""
    kinds = COMPONENTS + TICKET_COMPONENTS
    if names is not None:
        unknown = set(names) - {kind.name for kind in kinds}
        if unknown:
            raise StackError(f"no component {', '.join(sorted(unknown))}; the stack has {', '.join(ALL_NAMES)}")
        return [kind(config) for kind in kinds if kind.name in names]
    parts = [kind(config) for kind in COMPONENTS]
    for kind in TICKET_COMPONENTS:
        part = kind(config)
        if config.tickets_enabled or part.process() is not None:
            parts.append(part)
    return parts


def component(config: StackConfig, name: str) -> Component:
    for kind in COMPONENTS + TICKET_COMPONENTS:
        if kind.name == name:
            return kind(config)
    raise StackError(f"no component {name!r}; the stack has {', '.join(ALL_NAMES)}")


@contextlib.contextmanager
def _exclusive(config: StackConfig) -> Iterator[None]:
    """One `up` or `down` at a time per state directory."""
    lock_file = Paths(config.home).run / "stack.lock"
    lock_file.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_file, "w") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise StackError(f"stack: another `pathwatch stack up/down` is running on {config.home}") from None
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def status(config: StackConfig | None = None, names: tuple[str, ...] | None = None) -> StackStatus:
    """The state of every component (or those named), with endpoints and connection strings."""
    config = config if config is not None else resolve()
    return StackStatus(str(config.home), {part.name: part.status() for part in components(config, names)})


def up(config: StackConfig | None = None, report: Report | None = None,
       names: tuple[str, ...] | None = None) -> StackStatus:
    """Install what is missing, start every service, wait until each is ready, then set them up.

    Components install and start in parallel threads; the first error of each is collected
    and raised together (one line per component) after the others finished. ``names`` brings
    up only those components (e.g. ``("rt", "alertmanager")``).
    """
    config = config if config is not None else resolve()
    report = report or (lambda name, message: None)
    with _exclusive(config):
        parts = components(config, names)
        errors: dict[str, str] = {}

        def bring_up(part: Component) -> None:
            step = lambda message: report(part.name, message)  # noqa: E731
            try:
                part.install(step)
                part.start(step)
                part.wait_ready(time.monotonic() + config.ready_timeout, step)
            except Exception as error:  # reported with the others below, never lost with the thread
                errors[part.name] = _message(part.name, error)
                report(part.name, f"failed: {errors[part.name]}")

        threads = [threading.Thread(target=bring_up, args=(part,), name=f"stack-{part.name}") for part in parts]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        for part in parts:
            if part.name in errors or (part.name == Superset.name and TimescaleDB.name in errors):
                continue
            try:
                part.after_ready(lambda message, name=part.name: report(name, message))
                report(part.name, "ready")
            except Exception as error:  # e.g. a psycopg or Kafka client error while setting up
                errors[part.name] = _message(part.name, error)
                report(part.name, f"failed: {errors[part.name]}")
        if errors:
            raise StackError("\n".join(errors[name] for name in ALL_NAMES if name in errors))
    return status(config, names)


def _message(name: str, error: Exception) -> str:
    """One line naming the component: our own errors already do, others get the type and name."""
    if isinstance(error, (StackError, procs.ProcessError)):
        return str(error)
    return f"{name}: {type(error).__name__}: {str(error).strip()}"


def down(config: StackConfig | None = None, wipe: bool = False,
         names: tuple[str, ...] | None = None) -> dict[str, procs.ProcessRecord | None]:
    """Stop the processes the stack started (services in reverse order); ``wipe`` also removes the
    data of every component (of the named ones only, with ``names``), installs kept.

    Returns each component's stopped process (None where nothing ran).
    """
    config = config if config is not None else resolve()
    stopped: dict[str, procs.ProcessRecord | None] = {}
    with _exclusive(config):
        for part in reversed(components(config, names)):
            stopped[part.name] = part.stop()
        if wipe:  # every component's data, also RT's when tickets are off now but were on before
            for part in components(config, names if names is not None else ALL_NAMES):
                for path in part.data_paths():
                    _remove(path)
    return stopped


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)
