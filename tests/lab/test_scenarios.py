"""Lab scenarios through the running pipeline (markers ``lab`` and ``stack``; root): the lab's
collectors measure with the real tools, a fault is injected, and the pipeline on the test stack
must name it — and a benign run of the same length must raise nothing.

The CI version runs at 900× (a lab day in 96 s): route_change and host_dark, and a benign run.
The full set runs in bench/lab_bench.py (bench/results/lab.json). In tests/lab/ so that it runs before
the modules that share the session's one stream (tests/stack/streamed.py), as tests/faults/ does.
"""

from __future__ import annotations

import json
import subprocess

import pytest

from pathwatch.netlab.scenario import RUN_SLACK_S
from tests.faults.matrix import CLI, REPO
from tests.test_stack_integration import _environment, prepared_home

pytestmark = [pytest.mark.lab, pytest.mark.stack]

FACTOR = "900"


@pytest.fixture(scope="module")
def home():
    home = prepared_home()
    results = home / "lab" / "scenarios.jsonl"
    results.unlink(missing_ok=True)
    try:
        yield home
    finally:
        env = _environment(home)
        subprocess.run([*CLI, "lab", "down", "--home", str(home)], env=env, cwd=REPO, capture_output=True, timeout=300)
        subprocess.run([*CLI, "pipeline", "stop"], env=env, cwd=REPO, capture_output=True, timeout=300)
        subprocess.run([*CLI, "stack", "down"], env=env, cwd=REPO, capture_output=True, timeout=300)


def _scenario(home, name: str, fresh: bool = False) -> tuple[subprocess.CompletedProcess, dict]:
    result = subprocess.run([*CLI, "lab", "scenario", name, "--factor", FACTOR, "--home", str(home),
                             *(["--fresh"] if fresh else [])],
                            env=_environment(home), cwd=REPO, capture_output=True, text=True, timeout=1500)
    lines = (home / "lab" / "scenarios.jsonl").read_text().splitlines() if (home / "lab" / "scenarios.jsonl").exists() else []
    outcome = next((json.loads(line) for line in reversed(lines) if json.loads(line)["scenario"] == name), None)
    said = [line for line in result.stderr.splitlines() if not line.startswith(("lab: stack:", "lab: pipeline:"))]
    assert outcome is not None, "\n".join(said)[-4000:]
    return result, outcome


@pytest.mark.parametrize("name, kinds", [("route_change", {"route_change"}), ("host_dark", {"unreachable", "no_data"})])
def test_the_pipeline_names_the_fault_injected_into_the_lab(home, name, kinds):
    # The first run starts the jobs afresh: state an earlier run of the test stack left (a soak's) is not this lab's.
    result, outcome = _scenario(home, name, fresh=name == "route_change")
    assert outcome["records"] > 500 and outcome["late"] < outcome["records"] / 50, outcome
    assert outcome["passed"] and outcome["detected"]["kind"] in kinds, (outcome, result.stderr[-3000:])
    # A run stamped with its start may have begun up to RUN_SLACK_S (real) before the injection.
    earliest = -RUN_SLACK_S * float(FACTOR) / 3600
    assert earliest <= outcome["delay_lab_h"] < outcome_fault_h(outcome), outcome
    assert result.returncode == 0 and "PASSED" in result.stderr
    if name == "host_dark":  # rb answers "host unreachable" for b2: that is the dark host, not a new route
        assert [a for a in outcome["false_alarms"] if a["kind"] == "route_change"] == [], outcome["false_alarms"]


def outcome_fault_h(outcome: dict) -> float:
    from pathwatch.netlab.scenario import SCENARIOS

    return SCENARIOS[outcome["scenario"]].fault_h


def test_a_benign_run_of_the_same_length_raises_no_anomaly(home):
    result, outcome = _scenario(home, "benign")
    assert outcome["records"] > 500, outcome
    assert outcome["late"] < outcome["records"] / 50, outcome   # the detectors did look at them
    assert outcome["false_alarms"] == [], outcome["false_alarms"]
    assert result.returncode == 0
