"""Detector throughput: observations/s through every path monitor on one core, to bench/results/detect.json.

A simulated mesh (`pathwatch simulate`, default 7 hosts × 21 days) is parsed once; then only the
detectors are timed: each path's observations, in time order, through a fresh PathMonitor, as
`pathwatch detect` and the Flink job run them. The issue's aim is 100k records/s per core.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from pathlib import Path

from rich.console import Console

from pathwatch.models.monitor import PathMonitor

TARGET_PER_S = 100_000


def observations(raw: Path) -> dict[tuple, list]:
    """Each path's observations in time order, parsed and grouped as ``pathwatch detect`` does."""
    from collections import Counter

    from pathwatch.detect import parsed_records
    from pathwatch.models.engine import group_observations

    records = parsed_records([str(raw)], None, Counter(), Console(stderr=True, quiet=True))
    return {path: [row[3] for row in rows] for path, rows in group_observations(records, {}).items()}


def measure(by_path: dict[tuple, list]) -> tuple[int, int, float]:
    """(observations, anomaly emissions, seconds) for the detectors alone."""
    count = emitted = 0
    started = time.perf_counter()
    for (source, destination), rows in by_path.items():
        monitor = PathMonitor(source, destination)
        for obs in rows:
            emitted += len(monitor.observe(obs))
        emitted += len(monitor.advance(rows[-1].t))
        count += len(rows)
    return count, emitted, time.perf_counter() - started


def main() -> None:
    from pathwatch.sim.command import run_simulate

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=7)
    parser.add_argument("--days", type=int, default=21)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "detect.json")
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    console = Console(stderr=True)
    with tempfile.TemporaryDirectory() as tmp:
        run_simulate(Path(tmp), seed=args.seed, hosts=args.hosts, days=args.days, start=None, console=console)
        with console.status("parsing the simulated mesh"):
            by_path = observations(Path(tmp) / "raw.jsonl")
    with console.status("timing the detectors"):
        count, emitted, seconds = measure(by_path)
    result = {
        "benchmark": "detectors", "hosts": args.hosts, "days": args.days, "seed": args.seed,
        "paths": len(by_path), "observations": count, "anomaly_emissions": emitted,
        "seconds": round(seconds, 3), "per_s": round(count / seconds), "target_per_s": TARGET_PER_S,
        "meets_target": count / seconds >= TARGET_PER_S,
        "python": platform.python_version(), "machine": platform.machine(),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    console.print(f"{count:,} observations on {len(by_path)} paths in {seconds:.2f} s: "
                  f"[bold]{count / seconds:,.0f}/s[/bold] (target {TARGET_PER_S:,}/s) → {args.out}")


if __name__ == "__main__":
    main()
