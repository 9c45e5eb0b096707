"""The test stack, as the stack tests (tests/) and the benches (bench/) both use it: its home and
ports, the environment of a run on it with topics of its own, and the few helpers both need.

The test stack is a stack of its own beside a developer's: its state directory is
$PATHWATCH_TEST_HOME, else ``.pathwatch/test-stack`` in the checkout, and its pathwatch.toml
(:func:`prepared_home`) moves every service to ports of its own (:data:`PORTS`). A run on it
(a test module, a bench) gets fresh topics (:func:`topic_env`) so it never reads another's
messages. Tests import this module as ``bench.stack_env``; a bench run as a script (``python
bench/pipeline_bench.py``) puts the repository on ``sys.path`` first, ``python -m bench.pipeline_bench``
from the checkout needs nothing.

>>> from bench.stack_env import topic_env
>>> sorted(topic_env("bench-x"))[0]
'PATHWATCH_TOPIC_ANOMALIES'
>>> run_env(Path("/h"), "r1", tickets=False)["PATHWATCH_TOPIC_RAW"]
'faults-r1.raw'
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# The pathwatch CLI of this interpreter (the venv's), whatever is on PATH.
CLI = [sys.executable, "-c", "from pathwatch.cli import main; main()"]
# The test stack's ports: none of a default stack's, so a developer's running stack is left alone.
PORTS = {"kafka": {"port": 29092, "controller_port": 29093}, "postgres": {"port": 25433},
         "superset": {"port": 28088}, "flink": {"ui_port": 28081, "rpc_port": 26123}}
ROLES = ("raw", "records", "anomalies", "deadletters")


def stack_home() -> Path:
    """The test stack's state directory: $PATHWATCH_TEST_HOME, else .pathwatch/test-stack."""
    from pathwatch.stack import config as stack_config

    return Path(os.environ.get("PATHWATCH_TEST_HOME") or stack_config.default_home({}) / "test-stack").absolute()


def prepared_home() -> Path:
    """The test stack's home, with a pathwatch.toml that gives it its own ports."""
    home = stack_home()
    home.mkdir(parents=True, exist_ok=True)
    (home / "pathwatch.toml").write_text("".join(
        f"[{table}]\n" + "".join(f"{key} = {value}\n" for key, value in values.items())
        for table, values in PORTS.items()))
    return home


def environment(home: Path, **settings: str) -> dict[str, str]:
    """The environment of a ``pathwatch`` command on the stack at ``home``: this process's, without
    any PATHWATCH_* setting meant for another stack, plus ``settings``."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("PATHWATCH_")}
    env["PATHWATCH_HOME"] = str(home)
    env.update(settings)
    return env


def topic_env(prefix: str) -> dict[str, str]:
    """Topic names of one run (``<prefix>.raw`` ...), as the stack's environment settings."""
    return {f"PATHWATCH_TOPIC_{role.upper()}": f"{prefix}.{role}" for role in ROLES}


def run_env(home: Path, run: str, tickets: bool = True, prefix: str = "faults") -> dict[str, str]:
    """The environment of a fault, soak or collector run: the test stack (with ``tickets``, RT
    enabled: `stack up` starts it and `stack status` shows it), topics ``<prefix>-<run>.*``,
    parallelism 1."""
    return environment(home, PATHWATCH_PIPELINE_PARALLELISM="1", PATHWATCH_TICKETS_ENABLED="1" if tickets else "0",
                       **topic_env(f"{prefix}-{run}"))


def bench_stack(prefix: str) -> tuple[Path, dict[str, str], Callable[..., None]]:
    """The test stack's home (`.pathwatch/test-stack`, its own ports), the environment of a run
    with fresh topics ``<prefix>-<run id>.*``, and a ``pathwatch`` runner in that environment."""
    home = prepared_home()
    env = environment(home, **topic_env(f"{prefix}-{uuid.uuid4().hex[:8]}"))

    def cli(*argv: str) -> None:
        subprocess.run([*CLI, *argv], env=env, cwd=REPO, check=True, timeout=1800)

    return home, env, cli


def watermark_tails(data: list[bytes], at: float) -> list[bytes]:
    """One tracepath envelope per path of ``data`` at ``at`` (epoch seconds; tracepath text has no
    time: collected_at is its time). Published after the data, at more than the ordering delay past
    its end, they move the watermark past it on every partition: the streaming detectors have then
    judged exactly the span `pathwatch detect --until` judges."""
    from datetime import datetime, timezone

    import orjson

    from pathwatch.contract.timefmt import format_utc

    paths = {(e["source"], e["destination"]) for e in map(orjson.loads, data) if e.get("source") and e.get("destination")}
    stamp = format_utc(datetime.fromtimestamp(at, tz=timezone.utc))
    text = (" 1?: [LOCALHOST]                      pmtu 1500\n"
            " 1:  192.0.2.1                                          0.500ms reached\n"
            "     Resume: pmtu 1500 hops 1 back 1 \n")
    return [orjson.dumps({"format": "tracepath", "source": source, "destination": destination,
                          "collected_at": stamp, "payload": text}) for source, destination in sorted(paths)]


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
