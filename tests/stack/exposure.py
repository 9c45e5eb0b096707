"""What a running stack exposes, read from /proc: its processes, their listening sockets, command lines.

Pure readers for tests/test_security_stack.py (and checked against processes of their own in
tests/test_security_defaults.py): the stack's processes are those of the pid files under the
home's ``run/`` and ``jobs/`` folders, the services' process groups and all their descendants; a
socket is theirs when one of their file descriptors links to its inode.
"""

from __future__ import annotations

import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path

LISTEN = "0A"  # TCP state LISTEN in /proc/net/tcp{,6}


@dataclass(frozen=True)
class Listener:
    pid: int
    command: str
    address: str
    port: int

    @property
    def loopback(self) -> bool:
        address = ipaddress.ip_address(self.address)
        mapped = getattr(address, "ipv4_mapped", None)
        return address.is_loopback or bool(mapped and mapped.is_loopback)


def decode_address(hex_address: str) -> str:
    """An address of /proc/net/tcp{,6} (host byte order per 32-bit word, little-endian here) as text.

    >>> decode_address("0100007F"), decode_address("00000000"), decode_address("00000000000000000000000001000000")
    ('127.0.0.1', '0.0.0.0', '::1')
    >>> decode_address("0000000000000000FFFF00000100007F")
    '::ffff:7f00:1'
    """
    raw = bytes.fromhex(hex_address)
    ordered = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
    return str(ipaddress.ip_address(ordered))


def listening_sockets() -> dict[str, tuple[str, int]]:
    """Every listening TCP socket of this network namespace: 'socket:[inode]' -> (address, port)."""
    found = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            rows = Path(table).read_text().splitlines()[1:]
        except FileNotFoundError:
            continue
        for row in rows:
            parts = row.split()
            local, state, inode = parts[1], parts[3], parts[9]
            if state == LISTEN:
                address, port = local.rsplit(":", 1)
                found[f"socket:[{inode}]"] = (decode_address(address), int(port, 16))
    return found


def _stat(pid: int) -> tuple[int, int] | None:
    """(parent pid, process group) of a live process; None when it is gone."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = raw[raw.rindex(")") + 2:].split()
    return int(fields[1]), int(fields[2])


def all_pids() -> list[int]:
    return [int(entry.name) for entry in Path("/proc").iterdir() if entry.name.isdigit()]


def family(roots: set[int], groups: set[int] = frozenset()) -> set[int]:
    """``roots``, every process of the process groups ``groups``, and all descendants of those."""
    stats = {pid: stat for pid in all_pids() if (stat := _stat(pid)) is not None}
    members = {pid for pid in roots if pid in stats} | {pid for pid, (_, group) in stats.items() if group in groups}
    while True:
        more = {pid for pid, (parent, _) in stats.items() if parent in members} - members
        if not more:
            return members
        members |= more


def recorded_groups(home: Path) -> set[int]:
    """The process groups of the services under ``run/`` (each runs in a session of its own)."""
    from pathwatch.stack import procs

    records = [procs.read_record(pid_file) for pid_file in (home / "run").glob("*.pid")]
    return {record.pgid for record in records if record is not None and record.alive()}


def recorded_pids(home: Path) -> set[int]:
    """The live processes of the pid files under ``run/`` (services) and ``jobs/`` (pathwatch jobs);
    reads only (``jobs.running_jobs`` would remove stale entries)."""
    import json

    from pathwatch.stack import procs

    records = [procs.read_record(pid_file) for pid_file in (home / "run").glob("*.pid")]
    for entry in (home / "jobs").glob("*.json"):
        try:
            records.append(procs.ProcessRecord.from_json(json.dumps(json.loads(entry.read_text())["process"])))
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return {record.pid for record in records if record is not None and record.alive()}


def command(pid: int) -> str:
    """The command line of ``pid`` with its arguments joined by spaces ('' when gone)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def listeners(pids: set[int]) -> list[Listener]:
    """The listening TCP sockets held open by ``pids``."""
    sockets = listening_sockets()
    found = []
    for pid in sorted(pids):
        try:
            links = {os.readlink(fd) for fd in Path(f"/proc/{pid}/fd").iterdir()}
        except OSError:  # gone, or not ours to read
            continue
        for inode in links & sockets.keys():
            address, port = sockets[inode]
            found.append(Listener(pid, command(pid)[:120], address, port))
    return found


def read_secrets(home: Path) -> dict[str, str]:
    """The stack's secrets (the files of ``secrets/``), by file name; short ones are left out (they
    would match by chance, and no generated secret is short)."""
    folder = home / "secrets"
    values = {path.name: path.read_text().strip() for path in folder.iterdir() if path.is_file()} if folder.is_dir() else {}
    return {name: value for name, value in values.items() if len(value) >= 12}


def command_lines_with(secrets: dict[str, str]) -> list[tuple[int, str, str]]:
    """(pid, secret name, first words of its command) of every process whose command line holds a secret."""
    found = []
    for pid in all_pids():
        text = command(pid)
        for name, value in secrets.items():
            if value in text:
                found.append((pid, name, text.split(" ", 1)[0]))
    return found


def files_with(folder: Path, secrets: dict[str, str]) -> list[tuple[str, str]]:
    """(file, secret name) of every file under ``folder`` that holds a secret."""
    found = []
    for path in folder.rglob("*") if folder.is_dir() else []:
        if path.is_file():
            text = path.read_bytes().decode(errors="replace")
            found += [(str(path), name) for name, value in secrets.items() if value in text]
    return found
