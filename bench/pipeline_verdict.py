"""How far the pipeline bench's figures are from issue 17's targets, and which stage holds them back.

A pure reading of one run's figures (``bench/results/pipeline.json``, and the live latency of
``bench/results/live.json``): per target the measured value and by what factor it falls short;
per stage (each process of the stack) its CPU per record stored, its share of the machine's busy
time, the rate it alone would allow with the whole machine to itself, and its budget at the target.
At 10k records/s a machine of C cores has C × 100 µs of CPU per record for everything (200 µs on 2);
a stage's budget is that total in the stage's measured share, i.e. what it may cost if the shape
stays as measured and every stage gets cheaper by the same factor. The stage that holds the target
back is the one with the lowest rate of its own: even with every other stage free, the pipeline
cannot pass it.

``pipeline_bench.py`` writes the verdict into its results; ``python bench/pipeline_verdict.py``
writes it again into the committed results from their own figures.

>>> figures = {"machine": "2 cores", "end_to_end_records_per_s": 1000, "ratio_to_raw_kafka_consume": 0.02,
...            "cpu_us_per_record_stored": {"flink taskmanagers": 1500, "kafka": 300, "machine busy (all processes)": 2000}}
>>> result = verdict(figures)
>>> result["targets"]["records_per_s"]["short_by_factor"], result["holds_back"]["stage"]
(10.0, 'flink taskmanagers')
>>> result["stages"]["kafka"]["records_per_s_alone"], result["stages"]["kafka"]["budget_us_per_record_at_target"]
(6667, 30.0)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

TARGET_RECORDS_PER_S = 10_000
TARGET_RATIO_TO_RAW = 0.2
TARGET_LIVE_P99_S = 5.0
MACHINE = "machine busy (all processes)"


def _short_by(target: float, measured: float | None, higher_is_better: bool = True) -> dict:
    if measured is None:
        return {"target": target, "measured": None, "met": False}
    met = measured >= target if higher_is_better else measured <= target
    factor = (target / measured if higher_is_better else measured / target) if measured else None
    return {"target": target, "measured": measured, "met": met,
            "short_by_factor": None if met or factor is None else round(factor, 1)}


def verdict(pipeline: dict, live: dict | None = None) -> dict:
    """The targets against ``pipeline`` (pipeline.json's figures) and ``live`` (live.json's)."""
    cores = int(str(pipeline["machine"]).split()[0])
    per_record = pipeline["cpu_us_per_record_stored"]
    busy = per_record[MACHINE]
    budget = cores * 1e6 / TARGET_RECORDS_PER_S
    stages = {name: us for name, us in per_record.items()
              if name != MACHINE and not name.startswith(("machine:", "unaccounted")) and us > 0}
    table = {name: {"cpu_us_per_record": us, "share_of_machine_cpu": round(us / busy, 3),
                    "records_per_s_alone": round(cores * 1e6 / us),
                    "budget_us_per_record_at_target": round(budget * us / busy, 1)}
             for name, us in sorted(stages.items(), key=lambda item: -item[1])}
    slowest = max(stages, key=stages.get)
    targets = {
        "records_per_s": _short_by(TARGET_RECORDS_PER_S, pipeline.get("end_to_end_records_per_s")),
        "ratio_to_raw_kafka_consume": _short_by(TARGET_RATIO_TO_RAW, pipeline.get("ratio_to_raw_kafka_consume")),
    }
    if live:
        p99 = live["latency_s_publish_to_anomaly"]["p99"]
        targets["live_p99_s_publish_to_anomaly"] = {
            **_short_by(TARGET_LIVE_P99_S, p99, higher_is_better=False),
            "at_measurements_per_s": live.get("live_messages_per_s"),
            "p99_s_by_kind": {kind: figures["p99"] for kind, figures in live.get("latency_s_by_kind", {}).items()},
        }
    return {
        "targets": targets,
        "cpu_us_per_record": {"budget_at_target": round(budget, 1), "measured": busy,
                              "must_shrink_by_factor": round(busy / budget, 1)},
        "holds_back": {"stage": slowest, **table[slowest]},
        "stages": table,
    }


def live_figures(results: Path) -> dict | None:
    """``live.json``'s figures in the folder ``results``, or None when the live bench never ran."""
    path = results / "live.json"
    return json.loads(path.read_text()) if path.exists() else None


def main() -> None:
    results = Path(__file__).resolve().parent / "results"
    pipeline_path = results / "pipeline.json"
    pipeline = json.loads(pipeline_path.read_text())
    pipeline["verdict"] = verdict(pipeline, live_figures(results))
    pipeline_path.write_text(json.dumps(pipeline, indent=2) + "\n")
    json.dump(pipeline["verdict"], sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main()
