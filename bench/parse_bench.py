"""Parser throughput per format: records/s on one core, written to bench/results/parse.json.

Each format's bundled example envelopes are repeated (each copy with its own collection time)
until there are --records inputs, then read, parsed and serialised to JSON exactly as
`pathwatch parse` does. Time is the process's CPU time, best of --repeat runs: the machine is
shared, and wall-clock time there measures the neighbours as much as the parsers. Run it with
`./run bench`; compare the JSON across commits.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import orjson
from rich.console import Console
from rich.progress import track
from rich.table import Table

from pathwatch.ingest import registry
from pathwatch.ingest.examples import example_path
from pathwatch.ingest.parse import parse_item
from pathwatch.ingest.reader import read_items

TARGET_PER_S = 20_000  # trace and latency records per second on one core (issue #2)


def corpus(fmt: registry.Format, count: int) -> bytes:
    """``count`` envelope lines of the format's examples, each with a distinct collection time."""
    envelopes = [orjson.loads(line) for line in example_path(fmt).read_bytes().splitlines() if line.strip()]
    lines = []
    for index in range(count):
        envelope = dict(envelopes[index % len(envelopes)])
        envelope["collected_at"] = f"2024-01-01T{(index // 3600) % 24:02d}:{(index // 60) % 60:02d}:{index % 60:02d}Z"
        lines.append(orjson.dumps(envelope))
    return b"\n".join(lines) + b"\n"


def measure(data: bytes) -> tuple[int, int, float]:
    """(records, rejected, CPU seconds) for reading, parsing and serialising ``data``."""
    records = rejected = 0
    started = time.process_time()
    for item in read_items(data):
        outcome = parse_item(item)
        if outcome.error is not None:
            rejected += 1
        for record in outcome.records:
            record.model_dump_json()
            records += 1
    return records, rejected, time.process_time() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=20_000, help="inputs per format (default 20000)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per format; the fastest counts (default 3)")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "parse.json")
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})  # one core, as the target says
    results = []
    for fmt in track(list(registry.formats().values()), description="benchmarking parsers", console=Console(stderr=True)):
        data = corpus(fmt, args.records)
        measure(data[: len(data) // 20])  # warm-up: imports, caches
        records, rejected, seconds = min((measure(data) for _ in range(args.repeat)), key=lambda run: run[2])
        results.append(
            {
                "format": fmt.name,
                "inputs": args.records,
                "records": records,
                "rejected": rejected,
                "seconds": round(seconds, 3),
                "records_per_s": round(records / seconds),
                "bytes_per_input": round(len(data) / args.records),
            }
        )
    report = {
        "benchmark": "parse",
        "target_records_per_s": TARGET_PER_S,
        "clock": f"process CPU time, best of {args.repeat}",
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "results": results,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    table = Table(title=f"parse throughput, one core (target {TARGET_PER_S:,}/s for trace and latency)")
    for column in ("format", "records/s", "records", "rejected", "bytes/input"):
        table.add_column(column, justify="left" if column == "format" else "right")
    for row in results:
        table.add_row(row["format"], f"{row['records_per_s']:,}", str(row["records"]), str(row["rejected"]), str(row["bytes_per_input"]))
    Console().print(table)
    Console().print(f"written to {args.out}")


if __name__ == "__main__":
    main()
