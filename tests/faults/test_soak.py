"""The soak's short version (marker ``faults``): the pipeline fed a simulated mesh at a steady
250 messages/s for 3 minutes while tests/faults/soak.py samples every process of the stack.

Checked after a 60-s warm-up, from a sample every 5 s: the consumer lag stays bounded (in the
last fifth it comes back down to no more than its highest before), and no process gains open
file descriptors or threads (PostgreSQL's descriptors, a cache of the relations its backends
touched, are judged by its backends instead: see ``DESCRIPTOR_CACHES``). Memory is sampled and
reported but judged only by the 30-minute bench (bench/soak_bench.py, bench/results/soak.json):
over three minutes the JVMs are still touching their heaps for the first time.
"""

from __future__ import annotations

import subprocess
import uuid
from datetime import date, timedelta

import pytest

from bench.stack_env import CLI, REPO, run_env
from tests.faults.soak import Sampler, Stream, verdict

pytestmark = pytest.mark.faults

RATE, SECONDS, WARM_UP_S, EVERY_S = 250.0, 180.0, 60.0, 5.0


@pytest.fixture(scope="module")
def soak(own_stack, tmp_path_factory):
    from pathwatch.stack import config as stack_config
    from pathwatch.streaming.settings import from_stack

    home = own_stack
    env = run_env(home, uuid.uuid4().hex[:8], tickets=False, prefix="soak")

    def cli(*args: str) -> None:
        result = subprocess.run([*CLI, *args], env=env, cwd=REPO, capture_output=True, text=True, timeout=1500)
        assert result.returncode == 0, f"pathwatch {' '.join(args)}: {result.stderr[-3000:]}"

    sim = tmp_path_factory.mktemp("soak")
    try:
        cli("stack", "up")
        cli("db", "migrate")
        start = (date.today() - timedelta(days=6)).isoformat() + "T00:00:00Z"
        cli("simulate", "--out", str(sim), "--seed", "808", "--hosts", "8", "--days", "6", "--start", start)
        cli("pipeline", "start", "--fresh")
        settings = from_stack(stack_config.resolve(home=home, environ=env))
        stream = Stream(settings, sim / "raw.jsonl", RATE, SECONDS)
        sampler = Sampler(home, settings, EVERY_S, published=lambda: stream.done).start()
        stream.start().join(SECONDS + 300)
        samples = sampler.stop()
        yield {"samples": samples, "published": stream.done, "verdict": verdict(samples, WARM_UP_S)}
    finally:
        subprocess.run([*CLI, "pipeline", "stop"], env=env, cwd=REPO, capture_output=True, timeout=300)
        subprocess.run([*CLI, "stack", "down"], env=env, cwd=REPO, capture_output=True, timeout=300)


def test_the_stream_kept_its_rate(soak):
    assert soak["published"] >= 0.9 * RATE * SECONDS


def test_consumer_lag_stays_bounded(soak):
    result = soak["verdict"]
    assert result.lag_bounded, result.to_dict()


@pytest.mark.parametrize("kind", ["fds", "threads"])
def test_no_process_gains_descriptors_or_threads(soak, kind):
    growth = soak["verdict"].fd_growth if kind == "fds" else soak["verdict"].thread_growth
    assert set(growth) >= {"flink-jobmanager", "flink-taskmanager", "kafka", "postgresql"}
    assert soak["verdict"].leaking(kind) == {}, growth
