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
