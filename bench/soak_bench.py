"""Soak benchmark: the pipeline fed at a steady rate for ``--minutes`` (40), every process sampled.

Runs on the test stack (`.pathwatch/test-stack`, its own ports; brought up and down here, so do
not run it while the stack tests or another pipeline bench run). A simulated mesh big enough for
the whole run is streamed at ``--rate`` messages/s (default: 80 % of the end-to-end maximum in
bench/results/pipeline.json) while tests/faults/soak.py samples, every ``--every-s`` seconds,
the memory, open descriptors and threads of the JobManager, the TaskManager, Kafka and
PostgreSQL (each with its children), each job's consumer lag and newest checkpoint size. After
the warm-up: growth of each process tree's own memory (PSS without shared memory; target < 10 %)
beside its summed RSS, descriptor and thread growth, whether the lag and each job's checkpoint
stayed bounded.

The mesh is as wide as needed (up to the simulator's 40 hosts) for its record time to span about
a week (``--record-days``, 7): live, record time runs as the clock does and a hypertable meets a
new weekly chunk once a week, while a narrow mesh replayed at this rate spans months in minutes,
and every writing PostgreSQL backend keeps ~145 kB per chunk it meets
(bench/results/pg_chunk_memory.json). The warm-up (``--warm-up-min``; default: the real time the
run takes to cover the detectors' longest window, the diurnal detector's 3 days of record time,
at least 5 minutes) ends once every path's state is full.

The default rate is 80 % of the maximum bench/results/pipeline.json measured, on a mesh of a
few dozen paths; the maximum falls as the mesh widens (each path's state costs): with three
TaskManagers and the detect job saving each path's monitor every 30 s, 37 hosts (1,332 paths)
kept up with 900 messages/s for 32 minutes — pass ``--rate`` for such a mesh.

The CI version is tests/faults/test_soak.py (3 minutes at 250 messages/s).
Writes bench/results/soak.json. Usage: python bench/soak_bench.py [--minutes 40 --rate R]
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import asdict
from datetime import date, timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
# Messages per host pair and day of the simulator's default cadences (measured: 25,558 messages
# for 6 hosts over 4 days), to size the mesh for the run.
MESSAGES_PER_PATH_DAY = 213
# The WLCG/OSG mesh's nominal rate, an estimate (no published figure was found): ~250 hosts, each
# measuring latency to ~40 peers (10,000 directed pairs) with one latencybg result a minute
# (167/s), a trace of each pair every 10 minutes (17/s), throughput every 6 hours (0.5/s).
WLCG_NOMINAL_PER_S = 185


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=40.0)
    parser.add_argument("--rate", type=float, default=None, help="messages/s (default: 80 %% of the measured maximum)")
    parser.add_argument("--every-s", type=float, default=15.0)
    parser.add_argument("--warm-up-min", type=float, default=None,
                        help="minutes not judged (default: until the detectors' state is full)")
    parser.add_argument("--record-days", type=int, default=7,
                        help="days of record time the run should span at most (the simulator writes 4 or more)")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "soak.json")
    args = parser.parse_args()

    from bench.stack_env import CLI, bench_stack, run_env
    from pathwatch.models.detectors.diurnal import DiurnalParams
    from pathwatch.sim.config import MAX_HOSTS
    from pathwatch.stack import config as stack_config
    from pathwatch.streaming.settings import from_stack
    from tests.faults.soak import Sampler, Stream, verdict

    measured = json.loads((REPO / "bench" / "results" / "pipeline.json").read_text())["end_to_end_records_per_s"]
    rate = args.rate or round(0.8 * measured, -1)
    seconds = args.minutes * 60
    needed = rate * seconds * 1.1
    hosts = 3
    while hosts < MAX_HOSTS and hosts * (hosts - 1) * MESSAGES_PER_PATH_DAY * args.record_days < needed:
        hosts += 1
    days = max(4, math.ceil(needed / (hosts * (hosts - 1) * MESSAGES_PER_PATH_DAY)))
    # Every path's state is full, and its memory steady, once the run has covered the longest window
    # of measurements a detector keeps per path: the diurnal detector's.
    state_full_days = DiurnalParams().window_days
    warm_up_min = (args.warm_up_min if args.warm_up_min is not None
                   else max(5.0, math.ceil(args.minutes * state_full_days / days)))
    home, _env, _cli = bench_stack("soak")
    env = run_env(home, uuid.uuid4().hex[:8], tickets=False, prefix="soak")

    def cli(*argv: str) -> None:
        subprocess.run([*CLI, *argv], env=env, cwd=REPO, check=True, timeout=3600)

    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="pathwatch-soak-") as work:
        sim = Path(work)
        try:
            print(f"simulating {hosts} hosts × {days} days for {rate:.0f} messages/s over {args.minutes:.0f} min "
                  f"(warm-up {warm_up_min:.0f} min)", flush=True)
            start = (date.today() - timedelta(days=days)).isoformat() + "T00:00:00Z"
            cli("simulate", "--out", str(sim), "--seed", "909", "--hosts", str(hosts), "--days", str(days), "--start", start)
            cli("stack", "up")
            cli("db", "migrate")
            cli("pipeline", "start", "--fresh")
            settings = from_stack(stack_config.resolve(home=home, environ=env))
            stream = Stream(settings, sim / "raw.jsonl", rate, seconds)
            sampler = Sampler(home, settings, args.every_s, published=lambda: stream.done).start()
            stream.start()
            while stream.thread.is_alive():
                time.sleep(60)
                last = sampler.samples[-1] if sampler.samples else None
                print(f"[{time.monotonic() - started:6.0f} s] published {stream.done}; "
                      f"lag {last.lag if last else '?'}", flush=True)
            stream.join(60)
            samples = sampler.stop()
        finally:
            subprocess.run([*CLI, "pipeline", "stop"], env=env, cwd=REPO, capture_output=True, timeout=300)
            subprocess.run([*CLI, "stack", "down"], env=env, cwd=REPO, capture_output=True, timeout=300)
    result = verdict(samples, warm_up_min * 60)
    out = {
        "machine": "2 cores, 24 GiB; Superset idle, no tickets",
        "input": {"rate_per_s": rate, "times_wlcg_nominal": round(rate / WLCG_NOMINAL_PER_S, 1),
                  "wlcg_nominal_per_s_estimate": WLCG_NOMINAL_PER_S, "minutes": args.minutes, "published": stream.done,
                  "achieved_rate_per_s": round(stream.done / seconds, 1), "hosts": hosts, "days": days,
                  "record_days_per_real_minute": round(days / args.minutes, 3)},
        "warm_up_min": warm_up_min,
        "verdict": result.to_dict(),
        "target": "own memory (PSS without shared memory) growth < 10 % per process after warm-up, no descriptor "
                  "or thread growth, lag and checkpoint sizes bounded",
        "passed": result.passed,
        "samples": [asdict(s) for s in samples],
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out["verdict"], indent=1))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
