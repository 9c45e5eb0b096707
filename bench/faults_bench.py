"""Fault matrix benchmark: each fault of tests/faults/matrix.py under load, with recovery times.

Runs on the test stack (`.pathwatch/test-stack`, its own ports; brought up and down here, so do
not run it while the stack tests or another pipeline bench run). The pipeline streams a labelled
simulated mesh at ``--rate`` messages/s (default: half of the end-to-end rate in
bench/results/pipeline.json) while each fault happens in turn: kill -9 of Kafka, of PostgreSQL,
of the Flink JobManager and TaskManager (the Python operators run inside it), of the tickets
service (each left dead ``--kill-down-s``, 30 s, before the recovery step); PostgreSQL stopped
and RT stopped for ``--outage-s`` (default 300 s). After each, the
run waits until the pipeline caught up and reconciles by id; at the end it checks the records
topic (each record once), the anomalies against `pathwatch detect` and the tickets in RT.
Then, on Kafka alone, kill -9 of a collector (tests/faults/collector.py) after Kafka was away
``--outage-s`` + 30 s, longer than the producer's 5-minute message timeout.

The CI version (``./run test``) is tests/faults/test_fault_matrix.py: kills and outages of 20 s
at 400 messages/s.
Writes bench/results/faults.json. Usage: python bench/faults_bench.py [--outage-s 300 --rate R]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def default_rate() -> float:
    """Half the pipeline's measured end-to-end maximum (bench/results/pipeline.json)."""
    measured = json.loads((REPO / "bench" / "results" / "pipeline.json").read_text())
    return round(measured["end_to_end_records_per_s"] / 2, -1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--outage-s", type=float, default=300.0, help="how long PostgreSQL and RT stay stopped")
    parser.add_argument("--kill-down-s", type=float, default=30.0,
                        help="how long a killed component stays dead before the recovery step")
    parser.add_argument("--rate", type=float, default=None, help="messages/s (default: half the measured maximum)")
    parser.add_argument("--hosts", type=int, default=6)
    parser.add_argument("--days", type=int, default=8)
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "faults.json")
    parser.add_argument("--collector-only", action="store_true",
                        help="run only the collector kill and update its entry in --out (the matrix figures stay)")
    args = parser.parse_args()

    from bench.stack_env import bench_stack
    from tests.faults.collector import CollectorKill
    from tests.faults.matrix import FAULTS, FaultRun

    home, _env, _cli = bench_stack("faults")  # writes the test stack's ports; the run makes its own topics
    rate = args.rate or default_rate()
    started = time.monotonic()
    log = lambda line: print(f"[{time.monotonic() - started:7.0f} s] {line}", flush=True)  # noqa: E731

    def kill_collector(work: Path) -> dict:
        """The collector's fault on its own (Kafka only): Kafka away longer than the producer's
        5-minute message timeout, so failed deliveries are retried before the kill."""
        killed = CollectorKill(home, work, log=log)
        try:
            return killed.run(kafka_down_s=args.outage_s + 30)
        finally:
            killed.teardown()
            _cli("stack", "down")

    if args.collector_only:
        with tempfile.TemporaryDirectory(prefix="pathwatch-faults-") as work:
            collector = kill_collector(Path(work))
        result = json.loads(args.out.read_text())
        result["kill_collector"] = {**collector, "run": "on its own (--collector-only), after the matrix run above"}
        result.pop("not_covered", None)
        args.out.write_text(json.dumps(result, indent=2) + "\n")
        print(json.dumps(collector, indent=1))
        return
    with tempfile.TemporaryDirectory(prefix="pathwatch-faults-") as work:
        run = FaultRun(home, Path(work), outage_s=args.outage_s, kill_down_s=args.kill_down_s, rate=rate,
                       hosts=args.hosts, days=args.days, log=log)
        try:
            run.prepare()
            run.run(FAULTS)
            run.tickets_caught_up()
            counts = run.records_topic_counts()
            offline, streamed = run.anomalies_offline(), run.anomalies_streamed()
            tickets = run.ticket_check()
        finally:
            run.teardown()
        collector = kill_collector(Path(work) / "collector")
    result = {
        "machine": "2 cores, 24 GiB; the whole stack with RT and Alertmanager on it",
        "input": {"hosts": args.hosts, "days": args.days, "messages": len(run.data), "rate_per_s": rate,
                  "outage_s": args.outage_s, "kill_down_s": args.kill_down_s, "bad_inputs_per_fault": 3,
                  "parallelism": 1},
        "faults": [outcome.to_dict() for outcome in run.outcomes],
        "after_all_faults": run.final.to_dict(),
        "records_topic": {"distinct": len(counts), "expected": len(run.expected_ids),
                          "repeated": sum(1 for n in counts.values() if n > 1),
                          "missing": len(run.expected_ids - set(counts))},
        "anomalies": {"offline": len(offline), "streamed": len(streamed), "equal": offline == streamed,
                      "only_offline": len(offline - streamed), "only_streamed": len(streamed - offline)},
        "tickets": {key: (value if not isinstance(value, list) else len(value)) for key, value in tickets.items()},
        "python_worker": "thread mode: the Python operators run inside the TaskManager's JVM, so kill_taskmanager "
                         "kills the Python worker too",
        "kill_collector": collector,
        "total_s": round(time.monotonic() - started, 1),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({f["fault"]: [f["reconciled"], f["down_s"], f["caught_up_s"]] for f in result["faults"]}, indent=1))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
