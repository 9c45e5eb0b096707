"""The test stack the pipeline benches run on: its home, its ports, fresh topics per run.

>>> from bench.stack_env import topic_env
>>> sorted(topic_env("bench-x"))[0]
'PATHWATCH_TOPIC_ANOMALIES'
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-c", "from pathwatch.cli import main; main()"]


def topic_env(prefix: str) -> dict[str, str]:
    """Topic names of one run (``<prefix>.raw`` ...), as the stack's environment settings."""
    return {f"PATHWATCH_TOPIC_{role.upper()}": f"{prefix}.{role}" for role in ("raw", "records", "anomalies", "deadletters")}


def bench_stack(prefix: str) -> tuple[Path, dict[str, str], Callable[..., None]]:
    """The test stack's home (`.pathwatch/test-stack`, its own ports), the environment of a run
    with fresh topics ``<prefix>-<run id>.*``, and a ``pathwatch`` runner in that environment."""
    from tests.test_stack_integration import prepared_home

    home = prepared_home()
    env = {key: value for key, value in os.environ.items() if not key.startswith("PATHWATCH_")}
    env["PATHWATCH_HOME"] = str(home)
    env.update(topic_env(f"{prefix}-{uuid.uuid4().hex[:8]}"))

    def cli(*argv: str) -> None:
        subprocess.run([*CLI, *argv], env=env, cwd=REPO, check=True, timeout=1800)

    return home, env, cli


def committed(consumer, topic: str) -> int:
    """The offsets ``consumer``'s group committed on ``topic``, summed over its partitions (0 for
    a partition it never committed)."""
    from confluent_kafka import TopicPartition

    partitions = [TopicPartition(topic, p) for p in consumer.list_topics(topic, timeout=10).topics[topic].partitions]
    return sum(max(tp.offset, 0) for tp in consumer.committed(partitions, timeout=10))


def empty_pipeline_tables(database_url: str) -> None:
    """Empty the tables the pipeline writes (a run then inserts rather than updates)."""
    import psycopg

    from pathwatch.db.tables import PIPELINE_TABLES

    with psycopg.connect(database_url, autocommit=True) as connection:
        connection.execute(f"TRUNCATE {', '.join(PIPELINE_TABLES)}")
