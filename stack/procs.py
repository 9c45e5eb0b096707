"""Processes the stack starts: pid files, process groups, ports, stopping exactly what we started.

A service runs in a session of its own (so its process group is its pid) with its output
appended to its log file. Its pid file records the pid, the process group and the process's
start time (from /proc), so a pid reused by an unrelated process is never taken for ours.

>>> record = ProcessRecord(pid=1, pgid=1, started=0, argv=["init"])
>>> ProcessRecord.from_json(record.to_json()) == record
True
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import BinaryIO, Iterator, Mapping, Sequence


class ProcessError(RuntimeError):
    """A service could not be started or stopped; the message names it and says why."""


@dataclass(frozen=True)
class ProcessRecord:
    pid: int
    pgid: int
    started: int  # clock ticks after boot (field 22 of /proc/PID/stat)
    argv: list[str] = field(default_factory=list)

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> "ProcessRecord":
        data = json.loads(text)
        return cls(pid=int(data["pid"]), pgid=int(data["pgid"]), started=int(data["started"]),
                   argv=list(data.get("argv", [])))

    def alive(self) -> bool:
        """True while this very process runs (not a later one with the same pid, not a zombie)."""
        stat = _stat(self.pid)
        return stat is not None and stat["started"] == self.started and stat["state"] != "Z"


def _stat(pid: int) -> dict | None:
    """State, process group, parent and start time of a process from /proc; None if gone."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    # The command name (field 2) may hold spaces and parentheses: split after its last ')'.
    fields = raw[raw.rindex(")") + 2:].split()
    return {"state": fields[0], "ppid": int(fields[1]), "pgid": int(fields[2]), "started": int(fields[19])}


def read_record(path: Path) -> ProcessRecord | None:
    try:
        return ProcessRecord.from_json(path.read_text())
    except FileNotFoundError:
        return None
    except (ValueError, KeyError):
        return None  # a torn or foreign file is not a process we started


def running(path: Path) -> ProcessRecord | None:
    """The live process recorded in pid file ``path``, or None (a stale file is removed)."""
    record = read_record(path)
    if record is None:
        return None
    if record.alive():
        return record
    path.unlink(missing_ok=True)
    return None


def record_of(pid: int, argv: Sequence[str] = ()) -> ProcessRecord:
    stat = _stat(pid)
    if stat is None:
        raise ProcessError(f"process {pid} is not running")
    return ProcessRecord(pid=pid, pgid=stat["pgid"], started=stat["started"], argv=list(argv))


def write_record(path: Path, record: ProcessRecord) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(".tmp")
    temporary.write_text(record.to_json())
    temporary.replace(path)


def spawn(name: str, argv: Sequence[str], pid_file: Path, log_file: Path,
          env: Mapping[str, str] | None = None, cwd: Path | None = None) -> ProcessRecord:
    """Start ``argv`` in a new session, output appended to ``log_file``; record it in ``pid_file``."""
    with _log(log_file, f"starting {name}", argv) as log:
        try:
            process = subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                       env=dict(env) if env is not None else None, cwd=cwd, start_new_session=True)
        except OSError as error:
            raise ProcessError(f"{name}: cannot run {argv[0]}: {error.strerror}") from None
    record = ProcessRecord(pid=process.pid, pgid=process.pid, started=_wait_stat(process.pid), argv=list(argv))
    write_record(pid_file, record)
    # The child is reaped by nobody once this process exits; keep the Popen from warning.
    process.returncode = 0
    return record


@contextlib.contextmanager
def _log(log_file: Path, heading: str, argv: Sequence[str]) -> Iterator[BinaryIO]:
    """``log_file`` opened for appending, after a line saying when and what runs."""
    log_file.parent.mkdir(parents=True, exist_ok=True)
    with open(log_file, "ab") as log:
        log.write(f"\n==== {time.strftime('%Y-%m-%dT%H:%M:%S')} {heading}: {' '.join(argv)}\n".encode())
        log.flush()
        yield log


def _wait_stat(pid: int) -> int:
    stat = _stat(pid)
    if stat is None:  # it already exited: a start time that can never match
        return -1
    return stat["started"]


def group_members(pgid: int) -> list[int]:
    """Pids of live processes in process group ``pgid``."""
    members = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            stat = _stat(int(entry.name))
            if stat is not None and stat["pgid"] == pgid and stat["state"] != "Z":
                members.append(int(entry.name))
    return members


def stop(name: str, pid_file: Path, first_signal: int = signal.SIGTERM, timeout: float = 30.0) -> ProcessRecord | None:
    """Stop the process of ``pid_file`` and its process group; None if it was not running.

    ``first_signal`` goes to the recorded process only (a service's own shutdown path), then
    after ``timeout`` seconds SIGKILL goes to every process left in its group.
    """
    record = running(pid_file)
    if record is None:
        return None
    try:
        os.kill(record.pid, first_signal)
    except ProcessLookupError:
        pass
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and (record.alive() or group_members(record.pgid)):
        _reap(record.pid)
        time.sleep(0.1)
    if record.alive() or group_members(record.pgid):
        try:
            os.killpg(record.pgid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        kill_deadline = time.monotonic() + 10
        while time.monotonic() < kill_deadline and (record.alive() or group_members(record.pgid)):
            _reap(record.pid)
            time.sleep(0.1)
    _reap(record.pid)
    if record.alive():
        raise ProcessError(f"{name}: pid {record.pid} did not stop (even after SIGKILL)")
    pid_file.unlink(missing_ok=True)
    return record


def _reap(pid: int) -> None:
    """Collect the exit status of our own child (when this process started it), so it is not a zombie."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def port_open(port: int, host: str = "127.0.0.1", timeout: float = 0.5) -> bool:
    """True if something accepts TCP connections on host:port."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def _listening_inodes(port: int) -> set[str]:
    """The socket inodes listening on TCP ``port`` (any address), from /proc/net/tcp and tcp6."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except FileNotFoundError:
            continue
        for line in lines:
            parts = line.split()
            local, state, inode = parts[1], parts[3], parts[9]
            if state == "0A" and int(local.rsplit(":", 1)[1], 16) == port:  # 0A = LISTEN
                inodes.add(f"socket:[{inode}]")
    return inodes


def port_listening(port: int) -> bool:
    """True if some socket listens on TCP ``port`` (read from /proc, without connecting)."""
    return bool(_listening_inodes(port))


def port_owner(port: int) -> int | None:
    """Pid of the process listening on TCP ``port``; None if none or not visible to us."""
    inodes = _listening_inodes(port)
    if not inodes:
        return None
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            for descriptor in (entry / "fd").iterdir():
                if os.readlink(descriptor) in inodes:
                    return int(entry.name)
        except (FileNotFoundError, PermissionError, ProcessLookupError, NotADirectoryError):
            continue
    return None


def ensure_port_free(component: str, port: int) -> None:
    """Raise naming the owner when ``port`` is already taken."""
    if port_listening(port):
        owner = port_owner(port)
        who = f"pid {owner} ({_command(owner)})" if owner else "another process"
        raise ProcessError(f"{component}: port {port} in use by {who}; pick another with "
                           f"the stack's configuration (see pathwatch stack status)")


def _command(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()[:80]
    except OSError:
        return "?"


def output_tail(log_file: Path, offset: int, lines: int = 8) -> list[str]:
    """The last ``lines`` non-blank lines written to ``log_file`` after byte ``offset``."""
    with open(log_file, "rb") as log:
        log.seek(offset)
        written = log.read().decode(errors="replace").splitlines()
    return [line.rstrip()[:300] for line in written if line.strip()][-lines:]


def run_logged(component: str, what: str, argv: Sequence[str], log_file: Path,
               env: Mapping[str, str] | None = None, cwd: Path | None = None, timeout: float = 1800,
               stdin_text: str | None = None) -> None:
    """Run one install or set-up step to completion, output appended to ``log_file``.

    ``stdin_text`` is what the step reads on its standard input (a secret goes there, never on
    ``argv``, which the log's heading line and ``ps`` show). Raises ProcessError("COMPONENT:
    WHAT failed (exit N), see LOG", then the step's last output lines) when it fails, so a CI
    log shows why without the log file.
    """
    with _log(log_file, what, argv) as log:
        started_at = log.tell()
        feed = {"stdin": subprocess.DEVNULL} if stdin_text is None else {"input": stdin_text.encode()}
        try:
            result = subprocess.run(list(argv), stdout=log, stderr=subprocess.STDOUT, **feed,
                                    env=dict(env) if env is not None else None, cwd=cwd, timeout=timeout)
        except FileNotFoundError:
            raise ProcessError(f"{component}: {what} failed: {argv[0]} is not installed") from None
        except subprocess.TimeoutExpired:
            raise ProcessError(f"{component}: {what} did not finish in {timeout:.0f} s, see {log_file}") from None
    if result.returncode != 0:
        raise ProcessError(f"{component}: {what} failed (exit {result.returncode}), see {log_file}"
                           + "".join(f"\n  | {line}" for line in output_tail(log_file, started_at)))
