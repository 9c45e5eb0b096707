"""kill -9 of a collector mid-run while Kafka is away (marker ``faults``; tests/faults/collector.py):
every run the collector measured reaches the raw topic once, from its spool, after both are back."""

from __future__ import annotations

import subprocess

import pytest

from bench.stack_env import CLI, REPO
from tests.faults.collector import CollectorKill

pytestmark = pytest.mark.faults


@pytest.fixture(scope="module")
def killed(own_stack, tmp_path_factory):
    run = CollectorKill(own_stack, tmp_path_factory.mktemp("collector"), log=lambda line: print(f"[faults] {line}", flush=True))
    try:
        yield run.run()
    finally:
        run.teardown()
        subprocess.run([*CLI, "stack", "down"], env=run.env, cwd=REPO, capture_output=True, timeout=300)


def test_the_kill_hit_envelopes_that_only_the_spool_held(killed):
    assert killed["logged_before_kill"] > 0 and killed["spooled_at_kill"] > 0, killed
    assert killed["resent_on_restart"] >= killed["spooled_at_kill"], killed


def test_every_run_the_collector_measured_is_on_the_raw_topic_once(killed):
    assert killed["logged_runs"] > killed["logged_before_kill"], killed  # it measured again after the restart
    assert killed["lost"] == 0 and killed["duplicated"] == 0, killed


def test_the_spool_is_empty_once_kafka_has_everything(killed):
    assert killed["left_in_spool"] == 0 and killed["second_run_exit"] == 0, killed
