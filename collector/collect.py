"""Collectors: run a mesh's tasks with the real tools on schedule and wrap each output into a raw envelope.

The pure parts are kept apart from the I/O so they can be tested with a fake clock:

- ``Schedule`` says when each task is due: every ``interval`` seconds from the start, each run
  up to ``jitter`` later, slots the collector fell behind on skipped (and counted);
- ``Dispatcher`` says which due tasks start now: at most ``workers`` at once, plus one
  throughput test at a time in its own lane (two iperf3 runs would measure each other);
- ``TOOLS`` builds each tool's command line and default timeout, and writes a failure the
  collector saw (tool missing, timed out, no output) in the tool's own failure form when its
  format has one (iperf3's ``{"error": ...}``, ``ping: ...``, ``tracepath: NAME: ...``), so it
  becomes a ``succeeded: false`` record with ``meta.collector_error`` saying so; traceroute,
  mtr and scamper have no such form: those failures are log lines only;
- ``outcome_of`` turns one tool run into envelopes and the log line it deserves.

``Runner`` (subprocesses with a timeout; on timeout the tool gets SIGINT first, so iperf3 and
ping still print what they measured) and ``Collector`` (the loop, the worker threads, stop
on a signal) do the I/O.

>>> from pathwatch.collector.mesh_config import mesh_from_data, tasks_for
>>> mesh = mesh_from_data({"hosts": [{"name": "a", "address": "10.0.0.1"}, {"name": "b", "address": "10.0.0.2"}],
...     "groups": {"g": {"type": "mesh", "hosts": ["a", "b"]}},
...     "tests": [{"name": "rtt", "type": "latency", "tool": "ping", "group": "g", "interval": 60,
...                "options": {"count": 3}}]})
>>> (task,) = tasks_for(mesh, "a")
>>> TOOLS["ping"].argv(task.test.options, task.destination.address)
['-n', '-D', '-c', '3', '-i', '1', '-w', '8', '10.0.0.2']
>>> run = ToolRun(("ping", "10.0.0.2"), started=1714572000.0, finished=1714572003.2, timeout=18.0,
...               returncode=2, stdout="ping: connect: Network is unreachable\\n")
>>> (envelope,) = outcome_of(task, run, "lab").envelopes
>>> envelope["format"], envelope["source"], envelope["destination"], envelope["collected_at"]
('ping', 'a', 'b', '2024-05-01T14:00:03Z')
"""

from __future__ import annotations

import json
import math
import os
import queue
import random
import shutil
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from pathwatch.contract.timefmt import from_epoch

from pathwatch.ingest.errors import ParseError
from pathwatch.collector.mesh_config import Task

# --- when tasks run (pure) ---


@dataclass(frozen=True)
class Due:
    """A task due at ``at``; ``missed`` earlier slots were skipped; ``attempt`` > 0 is a retry."""

    task: Task
    at: float
    missed: int = 0
    attempt: int = 0


class Schedule:
    """When each task runs next. Times are plain seconds handed in; ``rng`` draws the jitter.

    Slots sit on a grid (start, start + interval, ...); each run starts at its slot plus a random
    0..jitter. A collector that fell behind (or a run that outlasted its interval) skips the slots
    already past and reports them as ``missed``. ``repeat=False`` runs each task once (``--once``).

    >>> from pathwatch.collector.mesh_config import mesh_from_data, expand
    >>> mesh = mesh_from_data({"hosts": [{"name": "a", "address": "x"}, {"name": "b", "address": "y"}],
    ...     "groups": {"g": {"type": "mesh", "hosts": ["a", "b"]}},
    ...     "tests": [{"name": "t", "type": "latency", "tool": "ping", "group": "g", "interval": 60}]})
    >>> schedule = Schedule(expand(mesh)[:1], start=1000.0, jitter=False)
    >>> [(d.task.key, d.at) for d in schedule.pop_due(1000.0)], schedule.next_time()
    ([('t:a>b', 1000.0)], 1060.0)
    >>> [(d.at, d.missed) for d in schedule.pop_due(1250.0)], schedule.next_time()
    ([(1060.0, 3)], 1300.0)
    """

    def __init__(self, tasks: Iterable[Task], start: float, rng: random.Random | None = None,
                 repeat: bool = True, jitter: bool = True):  # fmt: skip
        self.rng = rng if rng is not None else random.Random()
        self.repeat, self.jitter = repeat, jitter
        self._next: dict[str, tuple[float, float, Task]] = {}  # key -> (due time, slot base, task)
        self._retries: dict[str, tuple[float, int, Task]] = {}  # key -> (due time, attempt, task)
        for task in tasks:
            self._next[task.key] = (start + self._offset(task), start, task)

    def _offset(self, task: Task) -> float:
        return self.rng.uniform(0.0, task.test.jitter) if self.jitter and task.test.jitter else 0.0

    @property
    def pending(self) -> int:
        """How many runs are still to come (always > 0 when repeating)."""
        return len(self._next) + len(self._retries)

    def next_time(self) -> float | None:
        """The earliest due time, or None when nothing is left."""
        times = [entry[0] for entry in self._next.values()] + [entry[0] for entry in self._retries.values()]
        return min(times, default=None)

    def pop_due(self, now: float) -> list[Due]:
        """The runs due at ``now``, earliest first; regular slots are rescheduled onto the grid."""
        due: list[Due] = []
        for key, (at, attempt, task) in list(self._retries.items()):
            if at <= now:
                del self._retries[key]
                due.append(Due(task, at, attempt=attempt))
        for key, (at, base, task) in list(self._next.items()):
            if at > now:
                continue
            del self._next[key]
            missed = 0
            if self.repeat:
                base += task.test.interval
                while base <= now:  # a slot whose time has passed is skipped, not run late
                    base += task.test.interval
                    missed += 1
                self._next[key] = (base + self._offset(task), base, task)
            due.append(Due(task, at, missed=missed))
        return sorted(due, key=lambda d: (d.at, d.task.key))

    def retry(self, task: Task, at: float, attempt: int) -> None:
        """Run ``task`` again at ``at`` (its regular slots are unaffected)."""
        self._retries[task.key] = (at, attempt, task)


class Dispatcher:
    """Which due runs start now: at most ``workers`` at once, and throughput tests one at a time.

    Throughput tests have their own lane of one, so a queued iperf3 run never waits behind
    pings and two iperf3 runs never overlap. A task already queued or running is not queued
    twice (``offer`` returns False: the caller says so).

    >>> from pathwatch.collector.mesh_config import mesh_from_data, expand
    >>> mesh = mesh_from_data({"hosts": [{"name": n, "address": n} for n in "abc"],
    ...     "groups": {"g": {"type": "mesh", "hosts": ["a", "b", "c"]}},
    ...     "tests": [{"name": "bw", "type": "throughput", "tool": "iperf3", "group": "g", "interval": 60}]})
    >>> first, second = [Due(task, 0.0) for task in expand(mesh)[:2]]
    >>> dispatcher = Dispatcher(workers=4)
    >>> dispatcher.offer(first), dispatcher.offer(second), dispatcher.offer(first)
    (True, True, False)
    >>> [d.task.key for d in dispatcher.take()]
    ['bw:a>b']
    >>> dispatcher.done(first.task); [d.task.key for d in dispatcher.take()]
    ['bw:a>c']
    """

    def __init__(self, workers: int):
        if workers < 1:
            raise ValueError(f"workers must be >= 1, got {workers}")
        self.workers = workers
        self.queue: list[Due] = []
        self.running: dict[str, Task] = {}

    def offer(self, due: Due) -> bool:
        key = due.task.key
        if key in self.running or any(queued.task.key == key for queued in self.queue):
            return False
        self.queue.append(due)
        return True

    def take(self) -> list[Due]:
        """The queued runs that may start now (removed from the queue, counted as running)."""
        throughput_busy = any(task.throughput for task in self.running.values())
        others = sum(not task.throughput for task in self.running.values())
        started = []
        for due in list(self.queue):
            if due.task.throughput:
                if throughput_busy:
                    continue
                throughput_busy = True
            else:
                if others >= self.workers:
                    continue
                others += 1
            self.queue.remove(due)
            self.running[due.task.key] = due.task
            started.append(due)
        return started

    def done(self, task: Task) -> None:
        self.running.pop(task.key, None)

    @property
    def idle(self) -> bool:
        return not self.queue and not self.running


# --- the tools (pure) ---


def _num(value: float) -> str:
    """``1.0`` → ``'1'``, ``0.2`` → ``'0.2'``: numbers as a command line wants them."""
    return f"{value:g}"


def _ip_flag(options) -> list[str]:
    return [f"-{options.ip_version}"] if options.ip_version else []


def _iperf3_args(o, address: str) -> list[str]:
    args = [*_ip_flag(o), "-c", address, "-J", "-t", str(o.duration)]
    args += ["-p", str(o.port)] if o.port else []
    args += ["-u"] if o.protocol == "udp" else []
    args += ["-b", o.bandwidth] if o.bandwidth else []
    args += ["-P", str(o.streams)] if o.streams > 1 else []
    args += ["-R"] if o.reverse else []
    args += ["-O", str(o.omit)] if o.omit else []
    return args + ["--connect-timeout", str(int(o.connect_timeout * 1000))]


def _ping_deadline(o) -> int:
    return int(math.ceil(o.deadline if o.deadline else o.count * o.interval + 5))


def _ping_args(o, address: str) -> list[str]:
    args = [*_ip_flag(o), "-n", "-D", "-c", str(o.count), "-i", _num(o.interval), "-w", str(_ping_deadline(o))]
    args += ["-s", str(o.packet_size)] if o.packet_size is not None else []
    return args + [address]


def _traceroute_args(o, address: str) -> list[str]:
    args = [*_ip_flag(o), *(["-n"] if o.numeric else []), *{"udp": [], "icmp": ["-I"], "tcp": ["-T"]}[o.protocol]]
    return args + ["-m", str(o.max_hops), "-q", str(o.queries), "-w", _num(o.wait), address]


def _tracepath_args(o, address: str) -> list[str]:
    return [*_ip_flag(o), *(["-n"] if o.numeric else []), "-m", str(o.max_hops), address]


def _mtr_args(o, address: str) -> list[str]:
    args = ["--json", *_ip_flag(o), *(["-n"] if o.numeric else []), "-c", str(o.count), "-m", str(o.max_hops)]
    args += ["-i", _num(o.interval)] if o.interval else []
    args += ["-G", _num(o.gracetime)] if o.gracetime else []
    return args + [address]


def _scamper_args(o, address: str) -> list[str]:
    return ["-O", "json", "-c", f"trace -P {o.method} -m {o.max_hops} -w {int(o.wait)}", "-i", address]


def _json_object(run: ToolRun) -> tuple[list, str | None]:
    try:
        value = json.loads(run.stdout)
    except ValueError as error:
        return [], f"not JSON ({error})" if run.stdout.strip() else "empty output"
    return ([value], None) if isinstance(value, dict) else ([], f"JSON {type(value).__name__}, not an object")


def _scamper_traces(run: ToolRun) -> tuple[list, str | None]:
    """The trace objects of scamper's JSON lines (cycle records are bookkeeping)."""
    traces = []
    for line in run.stdout.splitlines():
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict) and value.get("type") == "trace":
            traces.append(value)
    return traces, None if traces else "no trace object in the output"


def _text(run: ToolRun) -> tuple[list, str | None]:
    return ([run.stdout], None) if run.stdout.strip() else ([], "empty output")


@dataclass(frozen=True)
class Tool:
    """How to run one tool: its format, arguments, default timeout and failure form.

    ``text`` tools get stderr merged into stdout (their parsers read diagnostics such as
    ``ping: ...`` as a terminal shows them); JSON tools keep stderr apart for the log.
    ``failure(task, reason)`` is a payload its parser reads as a failed run, or None.
    """

    name: str
    format: str
    text: bool
    argv: Callable[[Any, str], list[str]]
    timeout: Callable[[Any], float]
    payloads: Callable[["ToolRun"], tuple[list, str | None]]
    failure: Callable[[Task, str], Any] | None = None
    needs_ip: bool = False


TOOLS: dict[str, Tool] = {
    "iperf3": Tool("iperf3", "iperf3", False, _iperf3_args,
                   lambda o: o.duration + o.omit + o.connect_timeout + 15, _json_object,
                   lambda task, reason: {"start": {"connected": []}, "intervals": [], "end": {}, "error": reason}),
    "ping": Tool("ping", "ping", True, _ping_args, lambda o: _ping_deadline(o) + 10, _text,
                 lambda task, reason: f"ping: {reason}\n"),
    "traceroute": Tool("traceroute", "traceroute", True, _traceroute_args,
                       lambda o: (math.ceil(o.max_hops * o.queries / 16) + 2) * o.wait + 10, _text),
    "tracepath": Tool("tracepath", "tracepath", True, _tracepath_args, lambda o: o.max_hops * 3 + 10, _text,
                      lambda task, reason: f"tracepath: {task.destination.name}: {reason}\n"),
    "mtr": Tool("mtr", "mtr", False, _mtr_args, lambda o: o.count * (o.interval or 1) + (o.gracetime or 5) + 15,
                 _json_object),
    "scamper": Tool("scamper", "scamper", False, _scamper_args, lambda o: o.max_hops * o.wait + 10,
                    _scamper_traces, needs_ip=True),
}  # fmt: skip


def timeout_of(task: Task) -> float:
    """The task's timeout: its ``options.timeout``, else the tool's default for its options."""
    options = task.test.options
    return float(options.timeout) if options.timeout else float(TOOLS[task.test.tool].timeout(options))


# --- one run's result (pure) ---


@dataclass(frozen=True)
class ToolRun:
    """What one tool run gave. ``missing``: the tool was not found; ``error``: it could not start."""

    argv: tuple[str, ...]
    started: float
    finished: float
    timeout: float
    returncode: int | None = None
    stdout: str = ""
    stderr: str = ""
    timed_out: bool = False
    interrupted: bool = False
    missing: str | None = None
    error: str | None = None


@dataclass
class Outcome:
    """The envelopes of one run, a short summary of the records, and what went wrong (a log line).

    ``failed_run``: a record says the measurement failed (the tool's verdict, or the collector's).
    """

    envelopes: list[dict] = field(default_factory=list)
    summary: str = ""
    problem: str | None = None
    failed_run: bool = False
    busy: bool = False


def check(envelope: dict) -> tuple[list, str | None]:
    """(records, None) when the envelope parses, ([], reason) when it does not."""
    from pathwatch.ingest.parse import parse_value

    try:
        return parse_value(envelope)[1], None
    except ParseError as error:
        return [], str(error)


def _tail(text: str, limit: int = 300) -> str:
    text = " | ".join(line.strip() for line in text.strip().splitlines() if line.strip())
    return text if len(text) <= limit else "..." + text[-limit:]


def _describe(records: list) -> str:
    if not records:
        return "no records"
    failed = [r for r in records if not r.succeeded]
    kinds = sorted({r.kind for r in records})
    text = f"{len(records)} {'/'.join(kinds)} record{'s' if len(records) > 1 else ''}"
    return text + (f", failed run: {failed[0].error}" if failed else "")


def outcome_of(task: Task, run: ToolRun, mesh_name: str) -> Outcome:
    """The envelopes (and the log line) for one run of ``task``."""
    tool = TOOLS[task.test.tool]
    meta = {"mesh": mesh_name, "test": task.test.name, "tool": tool.name, "started_at": from_epoch(int(run.started)),
            "duration_s": round(run.finished - run.started, 3), "command": " ".join(run.argv)}  # fmt: skip

    def wrap(payload: Any, collector_error: str | None = None) -> dict:
        return {"format": tool.format, "source": task.source.name, "destination": task.destination.name,
                "collected_at": from_epoch(int(run.finished)), "payload": payload,
                "meta": {**meta, "collector_error": collector_error} if collector_error else meta}  # fmt: skip

    def failed(kind: str, reason: str) -> Outcome:
        if tool.failure is None:
            return Outcome([], "no records", f"{reason} (nothing published: {tool.format} output cannot say a run failed)")
        envelope = wrap(tool.failure(task, f"pathwatch collect: {reason}"), kind)
        return Outcome([envelope], _describe(check(envelope)[0]), f"{reason}; published as a failed run", True)

    if run.missing:
        return failed("tool_missing", run.missing)
    if run.error:
        return failed("not_started", run.error)
    payloads, why_none = tool.payloads(run)
    if run.timed_out:
        usable = [(p, records) for p in payloads if (records := check(wrap(p))[0])]
        if usable:
            records = [r for _, found in usable for r in found]
            return Outcome([wrap(p, "timeout") for p, _ in usable], _describe(records),
                           f"timed out after {run.timeout:g} s; published what the interrupted tool printed",
                           any(not r.succeeded for r in records))  # fmt: skip
        return failed("timeout", f"timed out after {run.timeout:g} s")
    if not payloads:
        detail = _tail(run.stderr) or why_none
        return failed("no_output", f"{tool.name} exited with status {run.returncode} and no usable output: {detail}")
    envelopes = [wrap(p) for p in payloads]
    records, problems = [], []
    for envelope in envelopes:
        found, reason = check(envelope)
        records += found
        if reason:
            problems.append(f"its output does not parse as {tool.format} ({reason}); published anyway")
    busy = tool.name == "iperf3" and any("busy" in str(p.get("error", "")) for p in payloads)
    return Outcome(envelopes, _describe(records), "; ".join(problems) or None,
                   any(not r.succeeded for r in records), busy)


# --- I/O: running tools ---


def find_executable(name: str) -> str | None:
    """Path of a tool: as given when it has a slash, else on PATH, else in the sbin directories."""
    if "/" in name:
        return name if os.path.isfile(name) and os.access(name, os.X_OK) else None
    return shutil.which(name) or shutil.which(name, path="/usr/local/sbin:/usr/sbin:/sbin")


def resolve_ip(address: str, ip_version: int | None) -> str:
    """An IP address for ``address`` (scamper takes addresses only); raises OSError."""
    family = {4: socket.AF_INET, 6: socket.AF_INET6}.get(ip_version or 0, socket.AF_UNSPEC)
    return socket.getaddrinfo(address, None, family, socket.SOCK_DGRAM)[0][4][0]


class Runner:
    """Runs tools as subprocesses in their own process group, with a timeout.

    On timeout (or ``stop``) the tool gets SIGINT, then SIGKILL after ``grace`` seconds; the
    output it printed until then is kept. Tools run with ``LC_ALL=C`` so their text is the
    one the parsers read.
    """

    def __init__(self, grace: float = 3.0, environ: dict[str, str] | None = None):
        self.grace = grace
        self.env = {**(os.environ if environ is None else environ), "LC_ALL": "C"}
        self._running: set[subprocess.Popen] = set()
        self._lock = threading.Lock()
        self.stopping = False

    def run(self, argv: list[str], timeout: float, merge_stderr: bool) -> ToolRun:
        started = time.time()
        try:
            # argv[0] is the bare name: tools print it in their diagnostics ("ping: ...")
            proc = subprocess.Popen([os.path.basename(argv[0]), *argv[1:]], executable=argv[0],
                                    stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT if merge_stderr else subprocess.PIPE,
                                    env=self.env, start_new_session=True)  # fmt: skip
        except OSError as error:
            return ToolRun(tuple(argv), started, time.time(), timeout, error=f"cannot run {argv[0]}: {error.strerror or error}")
        with self._lock:
            self._running.add(proc)
            if self.stopping:
                self._signal(proc, signal.SIGINT)
        timed_out = False
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            out, err = self._interrupt(proc)
        finally:
            with self._lock:
                self._running.discard(proc)
        return ToolRun(tuple(argv), started, time.time(), timeout, proc.returncode,
                       (out or b"").decode("utf-8", "replace"), (err or b"").decode("utf-8", "replace"),
                       timed_out=timed_out, interrupted=self.stopping)  # fmt: skip

    def _interrupt(self, proc: subprocess.Popen) -> tuple[bytes, bytes]:
        self._signal(proc, signal.SIGINT)
        try:
            return proc.communicate(timeout=self.grace)
        except subprocess.TimeoutExpired:
            self._signal(proc, signal.SIGKILL)
            return proc.communicate()

    @staticmethod
    def _signal(proc: subprocess.Popen, signum: int) -> None:
        try:
            os.killpg(proc.pid, signum)
        except (ProcessLookupError, PermissionError):
            pass

    def stop(self) -> int:
        """Interrupt every running tool (their runs come back ``interrupted``); returns how many."""
        with self._lock:
            self.stopping = True
            for proc in self._running:
                self._signal(proc, signal.SIGINT)
            return len(self._running)


def execute(task: Task, runner: Runner) -> ToolRun:
    """Run one task's tool (finding it, resolving the address when the tool needs an IP)."""
    tool, options = TOOLS[task.test.tool], task.test.options
    timeout = timeout_of(task)
    name = options.executable or tool.name
    executable = find_executable(name)
    now = time.time()
    if executable is None:
        where = "" if "/" in name else " on PATH or in /usr/local/sbin, /usr/sbin, /sbin"
        return ToolRun((name,), now, now, timeout, missing=f"{name} not found{where}")
    address = task.destination.address
    if tool.needs_ip:
        try:
            address = resolve_ip(address, options.ip_version)
        except OSError as error:
            return ToolRun((executable,), now, time.time(), timeout, error=f"cannot resolve {address}: {error}")
    return runner.run([executable, *tool.argv(options, address)], timeout, merge_stderr=tool.text)


# --- I/O: the collector loop ---


class Log:
    """Progress and problem lines on a rich console (stderr), each with the local time."""

    def __init__(self, console, clock: Callable[[], float] = time.time):
        self.console, self.clock = console, clock

    def _line(self, label: str, text: str) -> None:
        from rich.markup import escape

        stamp = time.strftime("%H:%M:%S", time.localtime(self.clock()))
        self.console.print(f"[dim]{stamp}[/dim] {label} {escape(text)}", highlight=False)

    def info(self, text: str) -> None:
        self._line("[cyan]collect[/cyan]", text)

    def ok(self, text: str) -> None:
        self._line("[green]ok[/green]", text)

    def failed_run(self, text: str) -> None:
        self._line("[yellow]failed run[/yellow]", text)

    def problem(self, text: str) -> None:
        self._line("[bold red]problem[/bold red]", text)


@dataclass
class Summary:
    """Counts of one collector run. ``problems``: runs (or slots) that gave no usable output."""

    runs: int = 0
    envelopes: int = 0
    failed_runs: int = 0
    problems: int = 0
    missing_tools: set[str] = field(default_factory=set)
    stopped: bool = False


class Collector:
    """Runs ``tasks`` on their schedule (or each once) and hands every envelope to ``emit``.

    Envelopes are emitted from the calling thread only; tools run in a pool of ``workers``
    threads plus one for the throughput lane. ``execute`` is injectable for tests.
    """

    def __init__(self, mesh_name: str, tasks: list[Task], emit: Callable[[dict], None], log: Log,
                 workers: int = 4, runner: Runner | None = None, rng: random.Random | None = None,
                 execute: Callable[[Task, Runner], ToolRun] = execute,
                 busy_delay: tuple[float, float] = (10.0, 60.0)):  # fmt: skip
        self.mesh_name, self.tasks, self.emit, self.log = mesh_name, tasks, emit, log
        self.workers = workers
        self.runner = runner or Runner()
        self.rng = rng or random.Random()
        self.execute = execute
        self.busy_delay = busy_delay
        self.summary = Summary()
        self._stop = threading.Event()

    def stop(self) -> None:
        """Stop taking new runs and interrupt the running ones (their output is not published)."""
        if not self._stop.is_set():
            self._stop.set()
            running = self.runner.stop()
            self.log.info(f"stopping: {running} running test{'s' if running != 1 else ''} interrupted, "
                          "their output is not published")  # fmt: skip

    def run(self, once: bool = False) -> Summary:
        schedule = Schedule(self.tasks, time.monotonic(), self.rng, repeat=not once, jitter=not once)
        dispatcher = Dispatcher(self.workers)
        results: queue.Queue = queue.Queue()
        pool = ThreadPoolExecutor(max_workers=self.workers + 1, thread_name_prefix="collect")

        def work(due: Due) -> None:
            try:
                results.put((due, self.execute(due.task, self.runner)))
            except BaseException as error:  # never lose a run: report the bug as this run's error
                now = time.time()
                results.put((due, ToolRun((due.task.test.tool,), now, now, timeout_of(due.task),
                                          error=f"collector error: {type(error).__name__}: {error}")))  # fmt: skip

        finished = False
        try:
            while not self._stop.is_set():
                now = time.monotonic()
                for due in schedule.pop_due(now):
                    if due.missed:
                        self.log.problem(f"{due.task.key}: {due.missed} run{'s' if due.missed > 1 else ''} skipped "
                                         "(the collector fell behind or a run outlasted its interval)")  # fmt: skip
                        self.summary.problems += 1
                    if not dispatcher.offer(due):
                        self.log.problem(f"{due.task.key}: still queued or running when due again; this run is skipped")
                        self.summary.problems += 1
                for due in dispatcher.take():
                    pool.submit(work, due)
                if once and dispatcher.idle and schedule.pending == 0:
                    break
                next_time = schedule.next_time()
                wait = 0.5 if next_time is None else min(0.5, max(0.0, next_time - time.monotonic()))
                try:
                    due, run = results.get(timeout=wait)
                except queue.Empty:
                    continue
                dispatcher.done(due.task)
                self._handle(due, run, schedule)
            finished = True
        finally:
            if not finished:  # an error on the way (a sink that failed): do not wait for the tools
                self.runner.stop()
            pool.shutdown(wait=True, cancel_futures=True)
        self.summary.stopped = self._stop.is_set()
        return self.summary

    def _handle(self, due: Due, run: ToolRun, schedule: Schedule) -> None:
        task = due.task
        if run.interrupted:
            self.log.info(f"{task.key}: interrupted by the stop, not published")
            return
        outcome = outcome_of(task, run, self.mesh_name)
        if run.missing and run.missing not in self.summary.missing_tools:
            self.summary.missing_tools.add(run.missing)
            kind = "failed-run records" if TOOLS[task.test.tool].failure else "nothing"
            self.log.problem(f"{run.missing}: install it or set the test's options.executable; "
                             f"its tasks ({task.test.tool}) produce {kind} until then")  # fmt: skip
        attempts = task.test.options.busy_retries if task.test.tool == "iperf3" else 0
        if outcome.busy and due.attempt < attempts:
            delay = self.rng.uniform(*self.busy_delay)
            schedule.retry(task, time.monotonic() + delay, due.attempt + 1)
            self.log.info(f"{task.key}: the iperf3 server is busy; retry {due.attempt + 1} of {attempts} in {delay:.0f} s")
            return
        self.summary.runs += 1
        for envelope in outcome.envelopes:
            self.emit(envelope)
            self.summary.envelopes += 1
        self.summary.failed_runs += outcome.failed_run
        took = f"{task.test.tool}, {run.finished - run.started:.1f} s"
        if outcome.problem:
            self.summary.problems += 1
            if not run.missing:  # a missing tool is said once per tool, above
                self.log.problem(f"{task.key} ({took}): {outcome.problem}")
        elif outcome.failed_run:
            self.log.failed_run(f"{task.key} ({took}): {outcome.summary}")
        else:
            self.log.ok(f"{task.key} ({took}): {outcome.summary}")


@contextmanager
def stop_on_signals(stop: Callable[[], None]) -> Iterator[None]:
    """Call ``stop`` on SIGINT/SIGTERM while inside (main thread only; elsewhere nothing changes)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM)}
    for signum in previous:
        signal.signal(signum, lambda *_: stop())
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
