"""A checkpointed PyFlink environment for one pipeline job, and where the job resumes from.

Each job keeps its checkpoints under ``<home>/flink/checkpoints/<job>/`` (retained when the job
is cancelled or its cluster dies) and its stop savepoints under ``<home>/flink/savepoints/<job>/``.
On start the newest complete one of either (a folder with a ``_metadata`` file) is the state to
recover (:func:`resume_point`, given to the client as ``--fromSavepoint``), so a stop, a crash
or ``kill -9`` of the cluster then a start resumes exactly where the job left off.
"""

from __future__ import annotations

import os
from pathlib import Path

from pathwatch.streaming.settings import PipelineSettings


def latest_checkpoint(folder: Path) -> Path | None:
    """The newest complete checkpoint under ``folder`` (any Flink job id), or None.

    >>> import tempfile
    >>> root = Path(tempfile.mkdtemp())
    >>> (root / "job1" / "chk-3").mkdir(parents=True); (root / "job1" / "chk-3" / "_metadata").write_text("")
    0
    >>> (root / "job1" / "chk-4").mkdir()  # not complete: no _metadata
    >>> latest_checkpoint(root).name
    'chk-3'
    """
    if not folder.is_dir():
        return None
    done = [meta.parent for meta in folder.glob("*/chk-*/_metadata")]
    return max(done, key=lambda path: (path.stat().st_mtime, int(path.name.split("-")[1])), default=None)


def resume_point(settings: PipelineSettings, job: str) -> Path | None:
    """The newest complete savepoint or retained checkpoint of ``job``, or None (start afresh)."""
    points = [meta.parent for meta in (settings.savepoints / job).glob("savepoint-*/_metadata")]
    checkpoint = latest_checkpoint(settings.checkpoints / job)
    if checkpoint is not None:
        points.append(checkpoint)
    return max(points, key=lambda path: (path / "_metadata").stat().st_mtime, default=None)


def flink_name(job: str) -> str:
    """The job's name in the cluster (what the web UI lists)."""
    return f"pathwatch-{job}"


def configuration(settings: PipelineSettings, job: str) -> dict[str, str]:
    """Flink settings of ``job``: thread mode, connector jars, checkpointing, restarts."""
    from pathwatch.stack import flink
    from pathwatch.stack.config import resolve

    folder = settings.checkpoints / job
    interval = settings.store_checkpoint_interval_s if job == "store" else settings.checkpoint_interval_s
    values = dict(flink.job_configuration(resolve(home=settings.home)))
    values.update({
        "execution.checkpointing.interval": f"{int(interval * 1000)} ms",
        "execution.checkpointing.dir": folder.as_uri(),
        "execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION",
        "execution.checkpointing.num-retained": "2",
        "state.backend.type": "hashmap",
        "parallelism.default": str(settings.parallelism),
        "pipeline.name": flink_name(job),
        "table.local-time-zone": "UTC",
        # Periodic watermarks of the sources (the detect job's records): a DataStream source run
        # through a statement set emitted none without it (the interval is not taken from the
        # stream environment); the SQL sources read it from the table config, set to the same.
        "pipeline.auto-watermark-interval": "200 ms",
        # Restart from the last checkpoint for as long as it takes (a TaskManager restarted by
        # `stack up`, Kafka back), waiting at most 30 s between attempts.
        "restart-strategy.type": "exponential-delay",
        "restart-strategy.exponential-delay.initial-backoff": "1 s",
        "restart-strategy.exponential-delay.max-backoff": "30 s",
        # Python bundles small enough that checkpoints are not held up by a big batch.
        "python.fn-execution.bundle.size": "2000",
        "python.fn-execution.bundle.time": "200",
    })
    return values


def environments(settings: PipelineSettings, job: str):
    """(StreamExecutionEnvironment, StreamTableEnvironment) for ``job``.

    Run by Flink's client (``flink run --python``), the environment submits to the cluster;
    run as a plain Python program, to a local MiniCluster.
    """
    from pathwatch.stack import flink
    from pathwatch.stack.config import resolve

    environment = flink.job_environment(resolve(home=settings.home))
    logs = Path(environment["FLINK_LOG_DIR"]) / job  # one folder per job: they would share a file name
    logs.mkdir(parents=True, exist_ok=True)
    environment["FLINK_LOG_DIR"] = str(logs)
    os.environ.update(environment)  # before the JVM starts
    from pyflink.common import Configuration
    from pyflink.datastream import StreamExecutionEnvironment
    from pyflink.table import StreamTableEnvironment

    values = configuration(settings, job)
    conf = Configuration()
    for key, value in values.items():
        conf.set_string(key, value)
    env = StreamExecutionEnvironment.get_execution_environment(conf)
    tables = StreamTableEnvironment.create(env)
    for key, value in values.items():
        tables.get_config().set(key, value)
    return env, tables
