"""Start, stop and inspect the pipeline's Flink jobs (``pathwatch pipeline start | stop | status``).

Each job runs in its own process (a PyFlink MiniCluster in thread mode), started detached with
its output in ``logs/pipeline-<job>.log`` and its pid in ``run/pipeline-<job>.pid``; it
registers itself in the job registry while it runs. ``stop`` sends SIGTERM (the job cancels
itself; its retained checkpoint is where the next start resumes), then SIGKILL after a grace
period. ``status`` lists the jobs, their newest checkpoint and each consumer group's lag.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from pathwatch.streaming.flink_env import latest_checkpoint
from pathwatch.streaming.settings import PipelineSettings, to_json

JOBS = ("normalise", "detect", "store")
# Each job's consumer group and the topic roles it reads.
GROUPS = {"normalise": ("pathwatch-normalise", ("raw",)), "detect": ("pathwatch-detect", ("records",)),
          "store": ("pathwatch-store", ("records", "anomalies", "deadletters"))}


class PipelineError(RuntimeError):
    pass


@dataclass
class JobStatus:
    name: str
    running: bool
    pid: int | None = None
    checkpoint: str | None = None
    lag: int | None = None
    info: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"name": self.name, "running": self.running, "pid": self.pid, "checkpoint": self.checkpoint,
                "lag": self.lag, "info": self.info}


def _paths(settings: PipelineSettings, job: str) -> tuple[Path, Path]:
    home = Path(settings.home)
    return home / "run" / f"pipeline-{job}.pid", home / "logs" / f"pipeline-{job}.log"


def _registered(settings: PipelineSettings) -> dict[str, dict]:
    from pathwatch.stack import jobs

    return {job.name.removeprefix("pipeline-"): job.to_dict() for job in jobs.running_jobs(Path(settings.home))
            if job.name.startswith("pipeline-")}


def start(settings: PipelineSettings, names: tuple[str, ...] = JOBS, fresh: bool = False,
          timeout: float = 180, report=lambda line: None) -> list[JobStatus]:
    """Start the jobs not running yet and wait until each one's Flink job is submitted.

    ``fresh`` discards the jobs' retained checkpoints first (the consumer groups' committed
    offsets then decide where reading starts).
    """
    from pathwatch.stack import procs

    running = _registered(settings)
    started = []
    for name in names:  # spawn every job first, then wait: their JVMs start in parallel
        if name in running:
            report(f"{name}: already running (pid {running[name]['pid']})")
            continue
        if fresh:
            import shutil

            shutil.rmtree(settings.checkpoints / name, ignore_errors=True)
        pid_file, log_file = _paths(settings, name)
        argv = [sys.executable, "-m", f"pathwatch.streaming.{name}_job", to_json(settings)]
        offset = log_file.stat().st_size if log_file.exists() else 0
        procs.spawn(f"pipeline-{name}", argv, pid_file, log_file)
        report(f"{name}: starting (log {log_file})")
        started.append((name, pid_file, log_file, offset))
    for name, pid_file, log_file, offset in started:
        _wait_submitted(name, pid_file, log_file, offset, timeout)
        report(f"{name}: running")
    return status(settings)


def _wait_submitted(name: str, pid_file: Path, log_file: Path, offset: int, timeout: float) -> None:
    from pathwatch.stack import procs

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with open(log_file, "rb") as log:
            log.seek(offset)
            text = log.read().decode(errors="replace")
        if '"flink_job_id"' in text:
            return
        if procs.running(pid_file) is None:
            tail = "\n".join(text.strip().splitlines()[-25:])
            raise PipelineError(f"pipeline job {name} exited while starting; its log {log_file} ends:\n{tail}")
        time.sleep(0.5)
    raise PipelineError(f"pipeline job {name} was not running after {timeout:.0f} s; see {log_file}")


def stop(settings: PipelineSettings, names: tuple[str, ...] = JOBS, timeout: float = 30) -> list[str]:
    """Stop the named jobs; returns those that were running."""
    from pathwatch.stack import procs

    stopped = []
    for name in names:
        pid_file, _log = _paths(settings, name)
        if procs.stop(f"pipeline-{name}", pid_file, timeout=timeout) is not None:
            stopped.append(name)
    return stopped


def consumer_lag(bootstrap: str, group: str, topic: str) -> int:
    """Messages in ``topic`` that ``group`` has not committed yet (all of them before its first commit).

    Offsets also count transaction markers (the normalise job writes transactionally), so a
    partition whose committed offset trails the end is probed: when a read-committed read from
    there finds no message, only markers remain and its lag is 0.
    """
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                         "isolation.level": "read_committed"})
    try:
        metadata = consumer.list_topics(topic, timeout=10)
        partitions = [TopicPartition(topic, p) for p in metadata.topics[topic].partitions]
        committed = consumer.committed(partitions, timeout=10)
        lag = 0
        for tp in committed:
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, tp.partition), timeout=10)
            start = tp.offset if tp.offset >= 0 else low
            if high > start and not _only_markers(consumer, topic, tp.partition, start, high):
                lag += high - start
        return lag
    finally:
        consumer.close()


def _only_markers(consumer, topic: str, partition: int, start: int, high: int) -> bool:
    from confluent_kafka import TopicPartition

    consumer.assign([TopicPartition(topic, partition, start)])
    try:
        message = consumer.poll(2.0)
        return message is None or message.error() is not None or message.offset() >= high
    finally:
        consumer.unassign()


def job_lag(settings: PipelineSettings, name: str) -> int | None:
    """Messages job ``name`` has not processed (committed) yet over the topics it reads; None if unknown."""
    group, roles = GROUPS[name]
    try:
        return sum(consumer_lag(settings.bootstrap, group, settings.topics[role]) for role in roles)
    except Exception:  # Kafka down: the lag is unknown, the rest of the status is still useful
        return None


def wait_caught_up(settings: PipelineSettings, timeout_s: float, on_poll=lambda lags: None,
                   settle: int = 2, every_s: float = 2.0) -> None:
    """Return once every job has processed everything (``settle`` polls in a row with no lag).

    Raises PipelineError when a job stops or the time runs out; ``on_poll`` sees each poll's lags.
    """
    deadline = time.monotonic() + timeout_s
    settled, lags = 0, {}
    while time.monotonic() < deadline:
        lags = {name: job_lag(settings, name) for name in JOBS}
        on_poll(lags)
        stopped = [job.name for job in status(settings) if not job.running]
        if stopped:
            raise PipelineError(f"pipeline job(s) {', '.join(stopped)} stopped; see {settings.home}/logs/pipeline-*.log")
        settled = settled + 1 if all(lag == 0 for lag in lags.values()) else 0
        if settled >= settle:
            return
        time.sleep(every_s)
    raise PipelineError(f"the pipeline did not catch up within {timeout_s:.0f} s (unprocessed: {lags}); "
                        "see `pathwatch pipeline status`")


def status(settings: PipelineSettings) -> list[JobStatus]:
    running = _registered(settings)
    out = []
    for name in JOBS:
        checkpoint = latest_checkpoint(settings.checkpoints / name)
        lag = job_lag(settings, name)
        job = running.get(name)
        out.append(JobStatus(name, job is not None, job["pid"] if job else None,
                             str(checkpoint) if checkpoint else None, lag, job["info"] if job else {}))
    return out
