"""Lab scenarios through the running pipeline (markers ``lab`` and ``stack``; root): the lab's
collectors measure with the real tools, a fault is injected, and the pipeline on the test stack
must name it — and a benign run must raise nothing.

The CI version runs the short version of every scenario (``lab scenario NAME --short``: baselines
of 8 to 26 lab hours, the fault phase ending once the fault is named) at 900× (a lab day in 96 s).
The full runs are bench/lab_bench.py's (bench/results/lab.json). The module takes the test stack
with the ``own_stack`` fixture (tests/stack/shared.py): down, nothing of another module running
(the session's stream, if one was made, is made again by the next module that needs it).
"""

from __future__ import annotations

import json
import subprocess

import pytest

from bench.stack_env import CLI, REPO, environment
from pathwatch.lab.scenario import HOURLY_KINDS, RUN_SLACK_S, SCENARIOS

pytestmark = [pytest.mark.lab, pytest.mark.stack]

FACTOR = "900"
FAULTS = [name for name, scenario in SCENARIOS.items() if scenario.expect]
BENIGN = [name for name, scenario in SCENARIOS.items() if not scenario.expect]
RECORDS_PER_LAB_HOUR = 20   # the lab's mesh measures ~40 an hour (12 paths: a ping test every 45 lab
                            # minutes, two traces an hour; throughput between the sites every ~6 h)


@pytest.fixture(scope="module")
def home(own_stack):
    home = own_stack
    results = home / "lab" / "scenarios.jsonl"
    results.unlink(missing_ok=True)
    runs: list[str] = []
    try:
        yield home, runs
    finally:
        env = environment(home)
        subprocess.run([*CLI, "lab", "down", "--home", str(home)], env=env, cwd=REPO, capture_output=True, timeout=300)
        subprocess.run([*CLI, "pipeline", "stop"], env=env, cwd=REPO, capture_output=True, timeout=300)
        subprocess.run([*CLI, "stack", "down"], env=env, cwd=REPO, capture_output=True, timeout=300)


def _scenario(home, name: str) -> tuple[subprocess.CompletedProcess, dict]:
    home, runs = home
    # The module's first run starts the jobs afresh: state an earlier run of the test stack left
    # (a soak's, streamed near the wall clock) is not this lab's, whose clock starts 30 days back.
    fresh = ["--fresh"] if not runs else []
    runs.append(name)
    result = subprocess.run([*CLI, "lab", "scenario", name, "--short", "--factor", FACTOR, "--home", str(home), *fresh],
                            env=environment(home), cwd=REPO, capture_output=True, text=True, timeout=1500)
    path = home / "lab" / "scenarios.jsonl"
    lines = [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
    outcome = next((line for line in reversed(lines) if line["scenario"] == name), None)
    assert outcome is not None, _said(result)[-4000:]
    assert outcome["version"] == "short", outcome
    # The collectors measured all along, and the detectors looked at what they measured.
    assert outcome["records"] >= RECORDS_PER_LAB_HOUR * outcome["lab_hours"], outcome
    assert outcome["late"] < outcome["records"] / 50, outcome
    return result, outcome


def _said(result: subprocess.CompletedProcess) -> str:
    """What the scenario run said, without the stack's and the pipeline's start-up lines."""
    return "\n".join(line for line in result.stderr.splitlines() if not line.startswith(("lab: stack:", "lab: pipeline:")))


@pytest.mark.parametrize("name", FAULTS)
def test_the_pipeline_names_the_fault_injected_into_the_lab(home, name):
    result, outcome = _scenario(home, name)
    if not (outcome["passed"] and outcome["detected"]["kind"] in SCENARIOS[name].expect):
        # pytest.fail prints its whole message (an assertion's is cut to a few lines): the run's
        # tables of what the fault's paths measured are what tells why it was not named.
        pytest.fail(f"{name} not named: detected {outcome['detected']}, other anomalies "
                    f"{[(a['kind'], a['source'], a['destination']) for a in outcome['false_alarms']]}\n"
                    + _said(result)[-12000:], pytrace=False)
    # A run stamped with its start may have begun up to RUN_SLACK_S (real) before the injection; a
    # loss anomaly is dated from the start of the hour bin its loss began in.
    earliest = -RUN_SLACK_S * float(FACTOR) / 3600 - (1.0 if outcome["detected"]["kind"] in HOURLY_KINDS else 0.0)
    assert earliest <= outcome["delay_lab_h"] < SCENARIOS[name].shortened().fault_h, outcome
    assert result.returncode == 0 and "PASSED" in result.stderr
    if name == "host_dark":  # rb answers "host unreachable" for b2: that is the dark host, not a new route
        assert [a for a in outcome["false_alarms"] if a["kind"] == "route_change"] == [], outcome["false_alarms"]


@pytest.mark.parametrize("name", BENIGN)
def test_a_benign_run_raises_no_anomaly(home, name):
    result, outcome = _scenario(home, name)
    assert outcome["false_alarms"] == [], outcome["false_alarms"]
    assert result.returncode == 0
