"""Start, stop and inspect the pipeline's Flink jobs (``pathwatch pipeline start | stop | status``).

The jobs run in a Flink cluster: the stack's own session cluster (``pathwatch stack up``) or
any other one whose REST address is ``flink.address`` (``--flink-address``). ``start`` submits
each job with Flink's own client (``bin/flink run --detached --python <job module>``), resuming
it from its newest savepoint or retained checkpoint; the client's output goes to
``logs/pipeline-<job>.log``. ``stop`` stops each job with a savepoint (under
``<home>/flink/savepoints/<job>/``; cancelled if the savepoint fails), which the next start
resumes from, also at another parallelism. ``status`` reads each job's state, newest
checkpoint and back-pressure from the cluster's REST API, and each consumer group's lag from
Kafka.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from pathwatch.stack.flink_rest import FlinkRest, FlinkRestError
from pathwatch.streaming.flink_env import flink_name, resume_point
from pathwatch.streaming.settings import PipelineSettings, write_file

JOBS = ("normalise", "detect", "store")
# Each job's consumer group and the topic roles it reads.
GROUPS = {"normalise": ("pathwatch-normalise", ("raw",)), "detect": ("pathwatch-detect", ("records",)),
          "store": ("pathwatch-store", ("records", "anomalies", "deadletters"))}
_SUBMITTED = re.compile(r"Job has been submitted with JobID ([0-9a-f]{32})")


class PipelineError(RuntimeError):
    pass


@dataclass
class JobStatus:
    name: str
    running: bool
    flink_job_id: str | None = None
    state: str | None = None
    checkpoint: str | None = None
    lag: int | None = None
    backpressure: str | None = None
    info: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"name": self.name, "running": self.running, "flink_job_id": self.flink_job_id, "state": self.state,
                "checkpoint": self.checkpoint, "lag": self.lag, "backpressure": self.backpressure, "info": self.info}


def _rest(settings: PipelineSettings) -> FlinkRest:
    return FlinkRest(settings.flink_address)


def _log_file(settings: PipelineSettings, job: str) -> Path:
    return Path(settings.home) / "logs" / f"pipeline-{job}.log"


def _active(settings: PipelineSettings) -> dict:
    """The pipeline's active jobs in the cluster by job name; raises PipelineError when it does not answer."""
    try:
        jobs = _rest(settings).jobs()
    except FlinkRestError as error:
        raise PipelineError(f"{error}; is the stack up (`pathwatch stack up`)?") from None
    ours = {flink_name(name): name for name in JOBS}
    active = {}
    for job in jobs:  # newest first: keep the newest of a name
        name = ours.get(job.name)
        if job.active and name is not None and name not in active:
            active[name] = job
    return active


# Jobs that may resume from a savepoint of an older graph by dropping the state the new graph has
# no operator for: the store job keeps none now (an older one's savepoint holds its record-id
# deduplication and rollups, which the database does now); the detect job's older DataStream
# source kept its Kafka offsets under an operator id its SQL source does not have (the detectors'
# state keeps its id, "detect"): the SQL source then starts from the consumer group's offsets,
# committed at every checkpoint; a record read again is not analysed twice (a duplicate, or a late
# dead letter once its path released past it).
REGRAPHED_JOBS = frozenset({"store", "detect"})


def submit_command(settings: PipelineSettings, job: str, settings_file: Path, restore: Path | None) -> list[str]:
    """Flink's client command line that submits ``job`` (no secret on it: they are in the file)."""
    from pathwatch.stack.flink import distribution

    module = Path(__file__).with_name(f"{job}_job.py")
    command = [str(distribution() / "bin" / "flink"), "run", "--detached", "-m", settings.flink_address,
               "--python", str(module), "-pyexec", sys.executable, "-pyclientexec", sys.executable]
    if restore is not None:
        command += ["--fromSavepoint", str(restore)]
        if job in REGRAPHED_JOBS:
            command.append("--allowNonRestoredState")
    return command + [str(settings_file)]


def start(settings: PipelineSettings, names: tuple[str, ...] = JOBS, fresh: bool = False,
          timeout: float = 300, report=lambda line: None) -> list[JobStatus]:
    """Submit the jobs not running yet, each from its newest savepoint or checkpoint.

    ``fresh`` discards the jobs' savepoints and checkpoints first (the consumer groups'
    committed offsets then decide where reading starts).
    """
    from pathwatch.stack import flink
    from pathwatch.stack.config import resolve

    active = _active(settings)
    _check_slots(settings, [name for name in names if name not in active])
    settings_file = write_file(settings)
    environment = flink.job_environment(resolve(home=settings.home))
    clients = []
    for name in names:  # every client first, then wait: their JVMs start in parallel
        if name in active:
            report(f"{name}: already running (Flink job {active[name].id})")
            continue
        if fresh:
            shutil.rmtree(settings.checkpoints / name, ignore_errors=True)
            shutil.rmtree(settings.savepoints / name, ignore_errors=True)
        restore = resume_point(settings, name)
        log_file = _log_file(settings, name)
        log_file.parent.mkdir(parents=True, exist_ok=True)
        offset = log_file.stat().st_size if log_file.exists() else 0
        with open(log_file, "ab") as log:
            log.write(f"--- {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} submitting {name}"
                      f"{f' from {restore}' if restore else ''}\n".encode())
            log.flush()
            client = subprocess.Popen(submit_command(settings, name, settings_file, restore), stdin=subprocess.DEVNULL,
                                      stdout=log, stderr=subprocess.STDOUT, env=environment)
        report(f"{name}: submitting to {settings.flink_address}" + (f" from {restore}" if restore else ""))
        clients.append((name, client, log_file, offset))
    for name, client, log_file, offset in clients:
        job_id = _wait_submitted(name, client, log_file, offset, timeout)
        report(f"{name}: running (Flink job {job_id})")
    return status(settings)


def _check_slots(settings: PipelineSettings, names: list[str]) -> None:
    """Refuse to submit jobs the cluster has no room for (each takes ``parallelism`` slots):
    they would wait for slots and then fail."""
    if not names:
        return
    needed = len(names) * settings.parallelism
    free = _rest(settings).overview().get("slots-available", 0)
    if free < needed:
        raise PipelineError(f"the Flink cluster at {settings.flink_address} has {free} free task slot(s); "
                            f"{', '.join(names)} at parallelism {settings.parallelism} need {needed}. Raise "
                            "flink.taskmanagers or flink.taskmanager_slots (PATHWATCH_FLINK_TASKMANAGERS, "
                            "PATHWATCH_FLINK_TASKMANAGER_SLOTS; then `pathwatch stack down` and `up`) or lower "
                            "pipeline.parallelism")


def _wait_submitted(name: str, client: subprocess.Popen, log_file: Path, offset: int, timeout: float) -> str:
    try:
        code = client.wait(timeout)
    except subprocess.TimeoutExpired:
        client.kill()
        raise PipelineError(f"pipeline job {name}: Flink's client did not submit it within {timeout:.0f} s; "
                            f"see {log_file}") from None
    with open(log_file, "rb") as log:
        log.seek(offset)
        text = log.read().decode(errors="replace")
    found = _SUBMITTED.search(text)
    if code != 0 or found is None:
        tail = "\n".join(text.strip().splitlines()[-25:])
        raise PipelineError(f"pipeline job {name}: submission failed (client exit {code}); {log_file} ends:\n{tail}")
    return found.group(1)


def stop(settings: PipelineSettings, names: tuple[str, ...] = JOBS, timeout: float = 120,
         report=lambda line: None) -> list[str]:
    """Stop the named jobs with a savepoint each (cancelled if it fails); returns those that were running."""
    rest = _rest(settings)
    try:
        active = _active(settings)
    except PipelineError:
        return []  # no cluster: nothing runs
    stopped = []
    for name in names:
        job = active.get(name)
        if job is None:
            continue
        folder = settings.savepoints / name
        folder.mkdir(parents=True, exist_ok=True)
        try:
            location = rest.stop_with_savepoint(job.id, folder.as_uri(), timeout=timeout)
            report(f"{name}: stopped with savepoint {location}")
        except FlinkRestError as error:
            report(f"{name}: {error}; cancelling (it resumes from its newest checkpoint)")
            rest.cancel(job.id)
        try:
            rest.wait_ended(job.id)
        except FlinkRestError as error:
            raise PipelineError(f"pipeline job {name}: {error}; see the Flink web UI") from None
        _prune_savepoints(folder)
        stopped.append(name)
    return stopped


def _prune_savepoints(folder: Path, keep: int = 2) -> None:
    """Keep the newest ``keep`` savepoints of a job (the next start resumes from the newest)."""
    done = sorted((meta.parent for meta in folder.glob("savepoint-*/_metadata")),
                  key=lambda path: (path / "_metadata").stat().st_mtime, reverse=True)
    for old in done[keep:]:
        shutil.rmtree(old, ignore_errors=True)


def consumer_lag(bootstrap: str, group: str, topic: str, config=None, probe_s: float = 5.0) -> int:
    """Messages in ``topic`` that ``group`` has not committed yet (all of them before its first commit).

    Offsets also count transaction markers and aborted messages (the normalise job writes
    transactionally), so the partitions whose committed offset trails the end are read from there
    (read-committed, all at once): a partition whose position reaches the end without a message
    holds only markers, and its lag is 0. One still unsettled after ``probe_s`` counts as lagging.
    (Read-committed, the end is the last stable offset: an open transaction is not lag yet.)
    """
    from confluent_kafka import Consumer, TopicPartition

    from pathwatch.stack.kafka_security import client_config

    consumer = Consumer(client_config(bootstrap, config, **{"group.id": group, "enable.auto.commit": False,
                                                            "isolation.level": "read_committed"}))
    try:
        metadata = consumer.list_topics(topic, timeout=10)
        partitions = [TopicPartition(topic, p) for p in metadata.topics[topic].partitions]
        trailing: dict[int, tuple[int, int]] = {}
        for tp in consumer.committed(partitions, timeout=10):
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, tp.partition), timeout=10)
            start = max(tp.offset, low)   # a committed offset retention has passed counts from the oldest kept
            if high > start:
                trailing[tp.partition] = (start, high)
        lagging = _with_messages(consumer, topic, trailing, probe_s)
        return sum(high - start for partition, (start, high) in trailing.items() if partition in lagging)
    finally:
        consumer.close()


def _with_messages(consumer, topic: str, spans: dict[int, tuple[int, int]], timeout_s: float) -> set[int]:
    """The partitions of ``spans`` (partition -> (start, end)) with a committed message in their span;
    those not settled within ``timeout_s`` are included too."""
    from confluent_kafka import TopicPartition

    if not spans:
        return set()
    consumer.assign([TopicPartition(topic, partition, start) for partition, (start, _) in spans.items()])
    found, unsettled = set(), set(spans)
    deadline = time.monotonic() + timeout_s
    try:
        while unsettled and time.monotonic() < deadline:
            message = consumer.poll(0.05)
            if message is not None and message.error() is None and message.partition() in unsettled:
                partition = message.partition()
                unsettled.discard(partition)
                if message.offset() < spans[partition][1]:
                    found.add(partition)
                consumer.pause([TopicPartition(topic, partition)])
            for tp in consumer.position([TopicPartition(topic, partition) for partition in unsettled]):
                if tp.offset >= spans[tp.partition][1]:
                    unsettled.discard(tp.partition)
        return found | unsettled
    finally:
        consumer.unassign()


def job_lag(settings: PipelineSettings, name: str) -> int | None:
    """Messages job ``name`` has not processed (committed) yet over the topics it reads; None if unknown."""
    from pathwatch.stack.config import resolve

    group, roles = GROUPS[name]
    try:
        config = resolve(home=settings.home)
        return sum(consumer_lag(settings.bootstrap, group, settings.topics[role], config) for role in roles)
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
        stopped = [name for name in JOBS if name not in _active(settings)]
        if stopped:
            raise PipelineError(f"pipeline job(s) {', '.join(stopped)} not running in the Flink cluster at "
                                f"{settings.flink_address}; see its web UI and `pathwatch stack logs flink`")
        settled = settled + 1 if all(lag == 0 for lag in lags.values()) else 0
        if settled >= settle:
            return
        time.sleep(every_s)
    raise PipelineError(f"the pipeline did not catch up within {timeout_s:.0f} s (unprocessed: {lags}); "
                        "see `pathwatch pipeline status`")


def status(settings: PipelineSettings, backpressure: bool = False) -> list[JobStatus]:
    """Each job's state in the cluster, newest completed checkpoint, consumer lag (and, with
    ``backpressure``, the highest back-pressure level of its operators: "ok", "low", "high")."""
    rest = _rest(settings)
    try:
        active = _active(settings)
        reachable = True
    except PipelineError:
        active, reachable = {}, False
    out = []
    for name in JOBS:
        job = active.get(name)
        checkpoint, pressure, info = None, None, {}
        if job is not None:
            try:
                counts = rest.checkpoints(job.id)
                latest = (counts.get("latest") or {}).get("completed") or {}
                checkpoint = latest.get("external_path")
                info = {"checkpoints_completed": counts.get("counts", {}).get("completed"),
                        "checkpoints_failed": counts.get("counts", {}).get("failed"),
                        "restored_from": ((counts.get("latest") or {}).get("restored") or {}).get("external_path"),
                        "parallelism": max(rest.parallelism(job.id).values(), default=None)}
                if backpressure:
                    levels = rest.backpressure(job.id)
                    pressure = max(levels.values(), key=["unknown", "ok", "low", "high"].index, default=None)
                    info["backpressure"] = levels
            except FlinkRestError as error:
                info = {"error": str(error)}
        if checkpoint is None:
            point = resume_point(settings, name)
            checkpoint = str(point) if point else None
        if not reachable:
            info["error"] = f"the Flink cluster at {settings.flink_address} does not answer"
        out.append(JobStatus(name, job is not None, job.id if job else None, job.state if job else None,
                             checkpoint, job_lag(settings, name), pressure, info))
    return out
