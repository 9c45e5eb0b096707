"""Soak: the pipeline fed at a steady rate for a long time, its resources sampled as it goes.

Shared by ``tests/faults/test_soak.py`` (a few minutes, run by CI) and ``bench/soak_bench.py``
(≥ 30 minutes, ``bench/results/soak.json``). Every ``every_s`` seconds it samples, for each of
the stack's processes (with their children): resident memory, open file descriptors and
threads; each job's consumer lag; each job's newest checkpoint size. :func:`verdict` compares
the samples after the warm-up: growth of memory (the median of the last fifth against the
median of the fifth that follows the warm-up), of descriptors and threads (the fewest of the
last fifth against the most of the first fifth after warm-up: a leak holds what it took, while a
short-lived child that happens to be alive at one sample, PostgreSQL's autovacuum or a
TimescaleDB job worker with its dozen descriptors, does not; PostgreSQL's descriptors, a cache
of the relations its backends touched, are judged by its backends: ``DESCRIPTOR_CACHES``), and
whether the lag and each job's checkpoint stayed bounded. The lag is a sawtooth (each job commits at its checkpoints, the
store every 10 s), so one sample in the last fifth may be its highest by chance: the lag is
bounded when it came back down in the last fifth, at least once, to no more than its highest
before — a lag that runs away never does (one rising slower than a tooth per sample is
caught only once it has risen more than a tooth). A checkpoint is bounded when its last fifth
is no more than 10 % above its highest before (its size moves with the records buffered then).

Memory is judged on each process tree's own memory: the proportional set size (PSS, which
counts a page shared by several processes once in total) without its share of shared memory.
Summed resident sizes count PostgreSQL's shared buffers once per backend that touched them, so
they grow for as long as backends reach buffers for the first time, up to a bound the
configuration sets (``shared_buffers``); both are reported (``rss_growth_pct``,
``shared_kb_last``).
"""

from __future__ import annotations

import json
import os
import statistics
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

# Descriptors and threads a process may open over the run without it counting as growth (a
# Kafka log segment rolled, a connection pool's spare): a leak grows with the run, not by these.
SLACK = {"fds": 16, "threads": 8}
# Processes whose descriptors are a cache bounded by their configuration, judged by their process
# count instead: each PostgreSQL backend keeps open the files of every relation it touched (its
# virtual file descriptors, up to ``max_files_per_process``), and TimescaleDB adds relations as the
# stream reaches a new chunk (a table and its indexes per hypertable): the soak's PostgreSQL grew
# 58 descriptors at once when its week of data crossed a 7-day chunk boundary. A connection leaked
# to it is a backend more: a process, counted in its threads (one per backend).
DESCRIPTOR_CACHES = frozenset({"postgresql"})
# The stack's processes by their pid files (every TaskManager: flink-taskmanager, flink-taskmanager-2, ...).
PROCESSES = {"flink-jobmanager": "flink-jobmanager", "flink-taskmanager": "flink-taskmanager", "kafka": "kafka",
             "postgresql": "timescaledb"}


def pid_files(run: Path) -> dict[str, Path]:
    """The pid file of each of the stack's processes that has one in ``run``, by name."""
    from pathwatch.stack.flink import taskmanager_pid_files

    found = {name: run / f"{pid_name}.pid" for name, pid_name in PROCESSES.items()}
    found.update({path.stem: path for path in taskmanager_pid_files(run)})
    return {name: path for name, path in found.items() if path.exists()}


def _children() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    return children


def tree(pid: int, children: dict[int, list[int]]) -> list[int]:
    """``pid`` and its descendants."""
    out, todo = [], [pid]
    while todo:
        current = todo.pop()
        out.append(current)
        todo.extend(children.get(current, []))
    return out


def _fields(text: str, names: tuple[str, ...]) -> dict[str, int]:
    """``Name:  123 kB`` lines of a /proc file, as {name: 123}, for ``names``."""
    out = {}
    for line in text.splitlines():
        name, _, value = line.partition(":")
        if name in names:
            out[name] = int(value.split()[0])
    return out


def resources(pids: list[int]) -> dict[str, int]:
    """Summed over ``pids`` (gone ones skipped): resident memory, proportional memory and its shared
    part (kB, from smaps_rollup), open descriptors and threads."""
    rss = pss = shared = fds = threads = 0
    for pid in pids:
        try:
            status = _fields(Path(f"/proc/{pid}/status").read_text(), ("VmRSS", "Threads"))
            rollup = _fields(Path(f"/proc/{pid}/smaps_rollup").read_text(), ("Pss", "Pss_Shmem"))
            fds += len(os.listdir(f"/proc/{pid}/fd"))
        except OSError:
            continue
        rss += status.get("VmRSS", 0)
        threads += status.get("Threads", 0)
        pss += rollup.get("Pss", 0)
        shared += rollup.get("Pss_Shmem", 0)
    return {"rss_kb": rss, "own_kb": pss - shared, "shared_kb": shared, "fds": fds, "threads": threads}


@dataclass
class Sample:
    at_s: float
    processes: dict[str, dict[str, int]]
    lag: dict[str, int | None]
    checkpoint_bytes: dict[str, int | None]
    published: int


class Sampler:
    """Samples the stack at ``home`` every ``every_s`` seconds in a thread until :meth:`stop`."""

    def __init__(self, home: Path, settings, every_s: float, published=lambda: 0):
        self.home, self.settings, self.every_s, self.published = home, settings, every_s, published
        self.samples: list[Sample] = []
        self._stop = threading.Event()
        self.started = time.monotonic()
        self.thread = threading.Thread(target=self._run, name="soak-sampler", daemon=True)

    def start(self) -> "Sampler":
        self.thread.start()
        return self

    def stop(self) -> list[Sample]:
        self._stop.set()
        self.thread.join(60)
        return self.samples

    def _pids(self) -> dict[str, list[int]]:
        children, out = _children(), {}
        for name, path in pid_files(self.home / "run").items():
            try:
                pid = int(json.loads(path.read_text())["pid"])
            except (OSError, ValueError, KeyError):
                continue
            out[name] = tree(pid, children)
        return out

    def _checkpoints(self) -> dict[str, int | None]:
        from pathwatch.stack.flink_rest import FlinkRest, FlinkRestError

        rest, sizes = FlinkRest(self.settings.flink_address), {}
        try:
            for job in rest.jobs():
                if job.active and job.name.startswith("pathwatch-"):
                    latest = (rest.checkpoints(job.id).get("latest") or {}).get("completed") or {}
                    sizes[job.name.removeprefix("pathwatch-")] = latest.get("checkpointed_size")
        except FlinkRestError:
            pass
        return sizes

    def sample(self) -> Sample:
        from pathwatch.streaming.pipeline import JOBS, job_lag

        processes = {name: resources(pids) for name, pids in self._pids().items()}
        return Sample(round(time.monotonic() - self.started, 1), processes,
                      {job: job_lag(self.settings, job) for job in JOBS}, self._checkpoints(), self.published())

    def _run(self) -> None:
        while not self._stop.is_set():
            self.samples.append(self.sample())
            self._stop.wait(self.every_s)


@dataclass
class Verdict:
    """What the samples after the warm-up say, per process and for the lag."""

    memory_growth_pct: dict[str, float] = field(default_factory=dict)
    rss_growth_pct: dict[str, float] = field(default_factory=dict)
    shared_kb_last: dict[str, int] = field(default_factory=dict)
    fd_growth: dict[str, int] = field(default_factory=dict)
    thread_growth: dict[str, int] = field(default_factory=dict)
    lag_max_before_last_fifth: int = 0
    lag_max_last_fifth: int = 0
    lag_min_last_fifth: int = 0
    checkpoint_bytes_max: dict[str, int] = field(default_factory=dict)
    checkpoint_bytes_max_last_fifth: dict[str, int] = field(default_factory=dict)
    checkpoint_bytes_max_before_last_fifth: dict[str, int] = field(default_factory=dict)

    @property
    def lag_bounded(self) -> bool:
        return self.lag_min_last_fifth <= max(self.lag_max_before_last_fifth, 1)

    @property
    def checkpoints_bounded(self) -> bool:
        return all(size <= 1.1 * self.checkpoint_bytes_max_before_last_fifth.get(job, 0)
                   for job, size in self.checkpoint_bytes_max_last_fifth.items())

    def leaking(self, kind: str) -> dict[str, int]:
        """The processes that gained more ``kind`` (``fds`` or ``threads``) than :data:`SLACK`
        allows, with their growth (descriptor caches, :data:`DESCRIPTOR_CACHES`, judged by threads)."""
        growth = self.fd_growth if kind == "fds" else self.thread_growth
        return {name: n for name, n in growth.items()
                if n > SLACK[kind] and not (kind == "fds" and name in DESCRIPTOR_CACHES)}

    @property
    def steady_handles(self) -> bool:
        return not self.leaking("fds") and not self.leaking("threads")

    @property
    def passed(self) -> bool:
        return self.flat_memory() and self.lag_bounded and self.checkpoints_bounded and self.steady_handles

    def flat_memory(self, limit_pct: float = 10.0) -> bool:
        return all(growth < limit_pct for growth in self.memory_growth_pct.values())

    def to_dict(self) -> dict:
        return {**asdict(self), "lag_bounded": self.lag_bounded, "checkpoints_bounded": self.checkpoints_bounded,
                "flat_memory": self.flat_memory(), "steady_handles": self.steady_handles, "passed": self.passed}


def verdict(samples: list[Sample], warm_up_s: float) -> Verdict:
    """Growth after ``warm_up_s`` (see the module docstring); needs ≥ 5 samples after it."""
    after = [s for s in samples if s.at_s >= warm_up_s]
    if len(after) < 5:
        raise ValueError(f"{len(after)} samples after the warm-up: too few to judge (need 5)")
    fifth = max(1, len(after) // 5)
    early, late = after[:fifth], after[-fifth:]
    out = Verdict()
    for name in after[0].processes:
        def series(key, group):
            return [s.processes[name][key] for s in group if name in s.processes]
        if series("rss_kb", early) and series("rss_kb", late):
            out.rss_growth_pct[name] = _growth_pct(series("rss_kb", early), series("rss_kb", late))
            out.memory_growth_pct[name] = _growth_pct(series("own_kb", early), series("own_kb", late))
            out.shared_kb_last[name] = series("shared_kb", late)[-1]
            out.fd_growth[name] = min(series("fds", late)) - max(series("fds", early))
            out.thread_growth[name] = min(series("threads", late)) - max(series("threads", early))
    total = [sum(v or 0 for v in s.lag.values()) for s in after]
    out.lag_max_before_last_fifth = max(total[:-fifth] or [0])
    out.lag_max_last_fifth = max(total[-fifth:])
    out.lag_min_last_fifth = min(total[-fifth:])
    out.checkpoint_bytes_max = _largest_checkpoints(samples)
    out.checkpoint_bytes_max_before_last_fifth = _largest_checkpoints(after[:-fifth])
    out.checkpoint_bytes_max_last_fifth = _largest_checkpoints(after[-fifth:])
    return out


def _growth_pct(early: list[int], late: list[int]) -> float:
    """How much the median of ``late`` is above that of ``early``, in %."""
    return round(100 * (statistics.median(late) / statistics.median(early) - 1), 1)


def _largest_checkpoints(samples: list[Sample]) -> dict[str, int]:
    """Each job's largest checkpoint in ``samples``."""
    largest: dict[str, int] = {}
    for s in samples:
        for job, size in s.checkpoint_bytes.items():
            if size is not None:
                largest[job] = max(largest.get(job, 0), size)
    return largest


class Stream:
    """Publishes the lines of a raw file at ``rate`` per second in a thread (``done`` counts)."""

    def __init__(self, settings, raw: Path, rate: float, seconds: float):
        self.settings, self.raw, self.rate, self.seconds = settings, raw, rate, seconds
        self.done = 0
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, name="soak-publisher", daemon=True)

    def start(self) -> "Stream":
        self.thread.start()
        return self

    def _run(self) -> None:
        import orjson

        from pathwatch.collector.publish import RawPublisher

        from pathwatch.contract.keys import envelope_key

        try:
            with RawPublisher(self.settings.bootstrap, self.settings.topics["raw"]) as publisher, \
                    open(self.raw, "rb") as lines:
                started = time.monotonic()
                for body in lines:
                    body = body.strip()
                    if not body:
                        continue
                    elapsed = time.monotonic() - started
                    if elapsed >= self.seconds:
                        break
                    ahead = started + self.done / self.rate - time.monotonic()
                    if ahead > 0:
                        time.sleep(ahead)
                    publisher.send(body, envelope_key(orjson.loads(body)))
                    self.done += 1
        except BaseException as error:
            self.error = error

    def join(self, timeout: float) -> None:
        self.thread.join(timeout)
        if self.thread.is_alive() or self.error is not None:
            raise RuntimeError(f"publishing failed or did not end: {self.error}")
