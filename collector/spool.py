"""The collector's spool: every envelope on disk before Kafka has it, kept until Kafka says so.

A collector killed with ``kill -9``, a host that loses power, or a Kafka that stays away longer
than the producer's message timeout would otherwise lose the measurements that sat in the
producer's memory. As perfSONAR's pScheduler keeps a run until its archiver succeeds, the
collector appends each envelope to a segment file (``NNNNNNNN.jsonl``, one JSON line each)
before handing it to the producer, and appends its line number to ``NNNNNNNN.acked`` when the
broker acknowledges it. A segment whose lines are all acknowledged, and that is no longer
written, is deleted. A collector that starts on a spool left by an earlier run sends again
the lines that were never acknowledged (the pipeline stores and analyses a measurement
published twice once: record ids come from its content).

A ``lock`` file holds an exclusive ``flock`` while a collector uses the spool, so two
collectors never share one. The spool is plain files: ``pending()`` reads what an earlier run
left, ``append`` and ``acknowledge`` are called by one producer (they take a lock, as delivery
reports may arrive on another thread).

>>> import tempfile
>>> directory = tempfile.mkdtemp()
>>> with Spool(directory, segment_lines=2) as spool:
...     first, second = spool.append(b'{"n": 1}'), spool.append(b'{"n": 2}')
...     spool.acknowledge(first)
>>> with Spool(directory) as spool:
...     [(entry.value, entry.line) for entry in spool.pending()]
[(b'{"n": 2}', 1)]
"""

from __future__ import annotations

import fcntl
import os
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

SEGMENT = re.compile(r"^(\d{8})\.jsonl$")


def _segment_numbers(directory: Path) -> list[int]:
    return sorted(int(m.group(1)) for p in directory.iterdir() if (m := SEGMENT.match(p.name)))


def _segment_lines(path: Path) -> tuple[list[bytes], bool]:
    """A segment's complete lines, and whether a last line with no newline was cut short (not one of them)."""
    data = path.read_bytes()
    return data.split(b"\n")[:-1], bool(data) and not data.endswith(b"\n")


def _acked_lines(path: Path) -> set[int]:
    """The line numbers an ``.acked`` file lists (none when it does not exist)."""
    if not path.exists():
        return set()
    return {int(token) for token in path.read_bytes().split() if token.isdigit()}


def count_unacknowledged(directory: str | os.PathLike) -> int:
    """Lines in the spool at ``directory`` not acknowledged, read from its files without taking its
    lock (a running collector holds it), e.g. to watch a collector's backlog from outside."""
    directory = Path(directory)
    total = 0
    for number in _segment_numbers(directory):
        lines, _torn = _segment_lines(directory / f"{number:08d}.jsonl")
        total += len(lines) - len(_acked_lines(directory / f"{number:08d}.acked") & set(range(len(lines))))
    return total


class SpoolError(Exception):
    """The spool directory cannot be used (in use by another collector, not writable)."""


@dataclass(frozen=True)
class Entry:
    """One spooled envelope: its bytes, and where it sits (segment number, line number)."""

    value: bytes
    segment: int
    line: int


@dataclass
class _Segment:
    lines: int = 0  # lines written (or found)
    acked: int = 0  # distinct lines acknowledged
    closed: bool = False  # no more lines will be written to it


class Spool:
    """Envelopes kept in ``directory`` until acknowledged. Use as a context manager.

    ``segment_lines``: lines per segment before a new one starts (a segment is deleted as a
    whole, so this bounds the disk an acknowledged past keeps). ``fsync``: sync each line to
    disk (survives a power loss, not only a killed process; a collector writes a few lines a
    second at most).
    """

    def __init__(self, directory: str | os.PathLike, segment_lines: int = 1000, fsync: bool = True):
        self.directory = Path(directory)
        self.segment_lines, self.fsync = segment_lines, fsync
        self._lock = threading.Lock()
        self._segments: dict[int, _Segment] = {}
        self._acked: dict[int, set[int]] = {}
        self._lock_fd: int | None = None
        self._current: int | None = None
        self._fd: int | None = None
        self.torn = 0  # lines found cut short (a write interrupted by a power loss): not resent

    # --- opening and what an earlier run left ---------------------------------------------------
    def __enter__(self) -> Spool:
        self.open()
        return self

    def __exit__(self, *_exc) -> None:
        self.close()

    def open(self) -> None:
        try:
            self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
            self._lock_fd = os.open(self.directory / "lock", os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as error:
            raise SpoolError(f"spool {self.directory}: {error.strerror or error}") from None
        try:
            fcntl.flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self._lock_fd)
            self._lock_fd = None
            raise SpoolError(f"spool {self.directory}: in use by another collector (each needs its own --spool)") from None
        for number in self._numbers():
            lines, torn = self._read_lines(number)
            self.torn += torn
            acked = self._read_acked(number)
            self._segments[number] = _Segment(lines=len(lines), acked=len(acked & set(range(len(lines)))), closed=True)
            self._acked[number] = acked
        self._current = max(self._segments, default=0) + 1

    def _numbers(self) -> list[int]:
        return _segment_numbers(self.directory)

    def _path(self, number: int, suffix: str) -> Path:
        return self.directory / f"{number:08d}.{suffix}"

    def _read_lines(self, number: int) -> tuple[list[bytes], bool]:
        return _segment_lines(self._path(number, "jsonl"))

    def _read_acked(self, number: int) -> set[int]:
        return _acked_lines(self._path(number, "acked"))

    def pending(self) -> Iterator[Entry]:
        """The lines of earlier runs never acknowledged, oldest first (call before ``append``)."""
        for number in sorted(self._segments):
            if number >= self._current:
                continue
            acked = self._acked.get(number, set())
            for line, value in enumerate(self._read_lines(number)[0]):
                if line not in acked:
                    yield Entry(value, number, line)
            self._forget_if_done(number)

    @property
    def unacknowledged(self) -> int:
        """Lines written (now or by an earlier run) and not yet acknowledged."""
        with self._lock:
            return sum(s.lines - s.acked for s in self._segments.values())

    # --- writing and acknowledging --------------------------------------------------------------
    def append(self, value: bytes) -> Entry:
        """Write one envelope's bytes (one line, no newline inside) and return where it is."""
        if b"\n" in value:
            raise ValueError("a spooled value must be one line (JSON without newlines)")
        with self._lock:
            segment = self._segments.get(self._current)
            if segment is not None and segment.lines >= self.segment_lines:
                self._close_current()
                segment = None
            if segment is None:
                segment = self._segments[self._current] = _Segment()
                self._fd = os.open(self._path(self._current, "jsonl"), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            os.write(self._fd, value + b"\n")
            if self.fsync:
                os.fsync(self._fd)
            entry = Entry(value, self._current, segment.lines)
            segment.lines += 1
            return entry

    def acknowledge(self, entry: Entry) -> None:
        """Kafka has ``entry``: note it, and delete its segment once every line of it is noted."""
        with self._lock:
            acked = self._acked.setdefault(entry.segment, set())
            segment = self._segments.get(entry.segment)
            if segment is None or entry.line in acked:
                return
            acked.add(entry.line)
            segment.acked += 1
            with open(self._path(entry.segment, "acked"), "ab") as file:
                file.write(b"%d\n" % entry.line)
            self._forget_if_done(entry.segment)

    def _close_current(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        segment = self._segments.get(self._current)
        if segment is not None:
            segment.closed = True
            self._forget_if_done(self._current)
        self._current += 1

    def _forget_if_done(self, number: int) -> None:
        segment = self._segments.get(number)
        if segment is None or not segment.closed or segment.acked < segment.lines:
            return
        for suffix in ("jsonl", "acked"):
            self._path(number, suffix).unlink(missing_ok=True)
        del self._segments[number]
        self._acked.pop(number, None)

    def close(self) -> None:
        """Close the segment being written (deleted if all acknowledged) and release the lock."""
        with self._lock:
            if self._current is not None and self._current in self._segments:
                self._close_current()
            if self._lock_fd is not None:
                os.close(self._lock_fd)
                self._lock_fd = None
