"""Lab benchmark: every scenario of lab/scenario.py through the running pipeline (root).

Runs on the test stack (`.pathwatch/test-stack`, its own ports; brought up and down here, so do
not run it while the stack tests or another bench run) and the network lab (`pathwatch lab`).
Each scenario is `pathwatch lab scenario NAME --factor F`: the lab's collectors measure with the
real tools on the compressed clock, the fault comes and goes, and the pipeline's anomalies are
read back. Writes bench/results/lab.json: per scenario the detected kind, its delay after the
injection (lab hours, and real seconds until the row was stored) and every other anomaly the
run raised; for the benign runs, their anomalies are the false alarms.

The CI version is tests/lab/test_scenarios.py: short versions (`--short`) at 900×, all ten scenarios.
Usage: python bench/lab_bench.py [--factor 600] [--scenarios route_change,benign] [--short]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def main() -> None:
    from pathwatch.lab.scenario import SCENARIOS

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--factor", type=float, default=600.0)
    parser.add_argument("--scenarios", default=",".join(SCENARIOS))
    parser.add_argument("--short", action="store_true", help="the short versions (the CI's), not the full runs")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "lab.json")
    args = parser.parse_args()

    from bench.stack_env import CLI, environment, prepared_home

    home = prepared_home()
    env = environment(home)
    results = home / "lab" / "scenarios.jsonl"
    results.unlink(missing_ok=True)
    started = time.monotonic()
    outcomes = []
    try:
        for number, name in enumerate(args.scenarios.split(",")):
            print(f"[{time.monotonic() - started:6.0f} s] {name}", flush=True)
            fresh = ["--fresh"] if number == 0 else []  # no state an earlier run of the test stack left
            version = ["--short"] if args.short else []
            done = subprocess.run([*CLI, "lab", "scenario", name, "--factor", f"{args.factor:g}", "--home", str(home),
                                   *fresh, *version], env=env, cwd=REPO, text=True, stderr=subprocess.PIPE, timeout=3600)  # fmt: skip
            lines = [json.loads(line) for line in results.read_text().splitlines()] if results.exists() else []
            outcome = next((o for o in reversed(lines) if o["scenario"] == name), None)
            if outcome is None:
                outcome = {"scenario": name, "passed": False, "error": done.stderr[-2000:]}
            outcomes.append(outcome)
            print(f"    {'passed' if outcome['passed'] else 'FAILED'}: detected {(outcome.get('detected') or {}).get('kind')}, "
                  f"{len(outcome.get('false_alarms', []))} other anomalies", flush=True)
    finally:
        for argv in (["lab", "down"], ["pipeline", "stop"], ["stack", "down"]):
            subprocess.run([*CLI, *argv, *(["--home", str(home)] if argv[0] == "lab" else [])], env=env, cwd=REPO,
                           capture_output=True, timeout=300)  # fmt: skip
    faults = [o for o in outcomes if o.get("expected")]
    benign = [o for o in outcomes if not o.get("expected")]    # every benign run, not only "benign"
    result = {
        "machine": "2 cores, 24 GiB; the whole stack and the lab on it",
        "factor": args.factor,
        "version": "short" if args.short else "full",
        "detected": f"{sum(o['passed'] for o in faults)} of {len(faults)} faults",
        "benign_false_alarms": sum(len(o.get("false_alarms", [])) for o in benign),
        "other_anomalies_in_fault_runs": sum(len(o.get("false_alarms", [])) for o in faults),
        "scenarios": outcomes,
        "total_s": round(time.monotonic() - started, 1),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out}: {result['detected']}, {result['benign_false_alarms']} false alarms in the benign runs")


if __name__ == "__main__":
    main()
