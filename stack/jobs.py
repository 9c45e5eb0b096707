"""The registry of running pathwatch jobs (Flink pipelines, collectors): pid files under ``jobs/``.

A job registers itself when it starts and unregisters when it ends; ``pathwatch stack status``
lists the live ones. An entry whose process is gone (it crashed) is dropped when listed.

>>> import tempfile
>>> home = Path(tempfile.mkdtemp())
>>> with registered("detect", home=home, kind="flink") as job:
...     [entry.name for entry in running_jobs(home)], job.info
(['detect'], {'kind': 'flink'})
>>> running_jobs(home)
[]
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from pathwatch.stack import procs
from pathwatch.stack.paths import Paths

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


@dataclass(frozen=True)
class Job:
    name: str
    pid: int
    started_at: str
    info: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "pid": self.pid, "started_at": self.started_at, "info": self.info}


def _folder(home: Path | None) -> Path:
    if home is None:
        from pathwatch.stack.config import default_home

        home = default_home()
    return Paths(Path(home)).jobs


def _file(home: Path | None, name: str) -> Path:
    if not _NAME.match(name):
        raise ValueError(f"job name {name!r}: use letters, digits, '.', '_' and '-' (at most 100)")
    return _folder(home) / f"{name}.json"


def register(name: str, pid: int | None = None, home: Path | None = None, **info: Any) -> Job:
    """Record that job ``name`` runs as ``pid`` (default: this process); ``info`` is free-form JSON."""
    pid = os.getpid() if pid is None else pid
    path = _file(home, name)
    existing = _load(path)
    if existing is not None and existing[1].alive() and existing[1].pid != pid:
        raise RuntimeError(f"job {name} is already running as pid {existing[1].pid}")
    record = procs.record_of(pid)
    job = Job(name, pid, time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), dict(info))
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps({**job.to_dict(), "process": json.loads(record.to_json())}))
    temporary.replace(path)
    return job


def unregister(name: str, home: Path | None = None) -> None:
    _file(home, name).unlink(missing_ok=True)


def _load(path: Path) -> tuple[Job, procs.ProcessRecord] | None:
    try:
        data = json.loads(path.read_text())
        record = procs.ProcessRecord.from_json(json.dumps(data["process"]))
        return Job(data["name"], int(data["pid"]), data["started_at"], data.get("info", {})), record
    except (FileNotFoundError, ValueError, KeyError, TypeError):
        return None


def running_jobs(home: Path | None = None) -> list[Job]:
    """The registered jobs whose process still runs, by name; stale entries are removed."""
    folder = _folder(home)
    jobs = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        loaded = _load(path)
        if loaded is not None and loaded[1].alive():
            jobs.append(loaded[0])
        else:
            path.unlink(missing_ok=True)
    return jobs


@contextlib.contextmanager
def registered(name: str, home: Path | None = None, **info: Any) -> Iterator[Job]:
    """Register this process as job ``name`` for the duration of the block."""
    job = register(name, home=home, **info)
    try:
        yield job
    finally:
        unregister(name, home=home)
