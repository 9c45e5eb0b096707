"""Pipeline benchmark: sustained raw → anomaly throughput and measurement-to-anomaly latency.

Runs on the test stack (`.pathwatch/test-stack`, its own ports; brought up and down here, so do
not run it while the stack tests run). Publishes a simulated mesh into fresh topics, with the three
jobs already running: the first part (70 %) as fast as the broker takes it (the flood: throughput),
then, once everything caught up, the rest at a steady rate below capacity (``--paced-rate``:
latency without a backlog in front). It measures:

- the raw Kafka consume rate of the same messages (a plain consumer: the reference ceiling),
- end-to-end throughput: canonical records stored per second from the first publish until
  the last record, anomaly and dead letter is in TimescaleDB (a sampler reads each job's
  progress once a second: the normalise and detect consumer groups' committed offsets and the
  stored rows; a job is done at the first sample where its progress reached its final value).
  ``wait_caught_up`` (the demo's and tests' wait) still confirms the end; its time is kept as
  ``confirmed_caught_up_s`` — its lag polls probe transaction markers and take 20-50 s each, so
  it overstates the pipeline's time,
- per-job rates: each job's input over the time until it was done,
- latency per anomaly: the time its first state was written to the anomalies topic minus the
  publish time of the raw message whose record raised it (its path's record at the anomaly's
  detection time; anomalies raised by a silence deadline have none and are not counted).
  Reported for all anomalies, and apart for those raised during the flood (they queue behind
  the backlog) and during the paced part. Time here is fast-forwarded (a day of a path's
  measurements in seconds), so a path's wait for its own streams to be complete is compressed:
  `bench/live_bench.py` measures latency at the real cadence,
- CPU seconds during the flood of every process of the stack (Flink's JobManager; its
  TaskManagers together, which run the jobs' operators and their Python code; Kafka; PostgreSQL;
  Superset, idle), of this bench (publisher, sampler), of every other live process, the
  kernel's interrupt work and time stolen by the hypervisor, against the whole machine's busy
  time; what is left is named as processes that ended meanwhile,
- each job's newest checkpoint size after the flood, and the detect job's keyed state per
  1,000 paths,
- per operator chain of each Flink job, its busy seconds (the REST metric
  ``busyTimeMsPerSecond`` summed over subtasks, sampled every 5 s: busy includes waiting for
  the CPU or the embedded interpreter's lock, so it ranks the chains, it does not add to CPU).

The flood is 70 % of eight weeks of a 7-host mesh (~357k records, ~2.5 minutes) by default: a
fresh job spends its first minute or two loading and compiling (the C2 JIT thread took ~40 % of
the TaskManager's CPU in the first minute of a one-week flood), so a shorter flood measures the
start-up more than the pipeline (the four-week flood of 2026-11-28 gave 1,290 records/s, this one
~2,700 with a normalise ~20 µs a message cheaper; ``floor_bench.py`` drains each job alone and all
three together from a filled topic).

Writes bench/results/pipeline.json, with a verdict on issue 17's targets (``pipeline_verdict.py``:
by how much each is missed, which stage holds it back, the per-stage CPU budget). Usage: python bench/pipeline_bench.py [--hosts 7 --days 56 --paced-fraction 0.3 --paced-rate 300]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import numpy as np
import orjson

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from bench.stack_env import CLI  # noqa: E402  (the repository on the path first)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=7)
    parser.add_argument("--days", type=int, default=56, help="days of the simulated mesh (the flood's length)")
    parser.add_argument("--seed", type=int, default=4040)
    parser.add_argument("--paced-fraction", type=float, default=0.3,
                        help="the last part of the input, published at --paced-rate after the flood caught up")
    parser.add_argument("--paced-rate", type=float, default=300.0, help="messages/s of the paced part")
    args = parser.parse_args()

    from bench.stack_env import bench_stack, empty_pipeline_tables

    home, env, cli = bench_stack("bench")

    sim = home / "bench-sim" / f"{args.seed}-{args.hosts}h-{args.days}d"
    if not (sim / "raw.jsonl").exists():
        cli("simulate", "--out", str(sim), "--seed", str(args.seed), "--hosts", str(args.hosts), "--days", str(args.days))
    cli("stack", "up")
    try:
        os.environ.update(env)
        from pathwatch.stack.config import resolve
        from pathwatch.streaming.pipeline import wait_caught_up
        from pathwatch.streaming.settings import from_stack

        settings = from_stack(resolve(home=home))
        cli("db", "migrate")
        empty_pipeline_tables(settings.database_url)
        cli("pipeline", "start", "--fresh")
        lines = [line for line in (sim / "raw.jsonl").read_bytes().splitlines() if line.strip()]
        from pathwatch.collector.publish import RateLimit, RawPublisher
        from pathwatch.contract.keys import envelope_key

        split = len(lines) - int(len(lines) * args.paced_fraction)
        sampler = Progress(settings)
        cpu_before = _cpu_by_process(home)
        started = time.time()
        sampler.start()
        on_poll = lambda lags: print(f"  {time.time() - started:6.0f} s unprocessed {lags}", flush=True)  # noqa: E731
        with RawPublisher(settings.bootstrap, settings.topics["raw"]) as publisher:
            for line in lines[:split]:
                publisher.send(line, envelope_key(orjson.loads(line)))
        published = time.time()
        wait_caught_up(settings, 3600, on_poll, every_s=1.0)
        done = time.time()
        time.sleep(2.0)  # a last sample after the confirmation
        jobs = sampler.summary(started)
        cpu_after = _cpu_by_process(home)
        cpu = _accounted({name: round(cpu_after[name] - cpu_before.get(name, 0.0), 1) for name in cpu_after})
        stored = jobs["jobs"]["store"]["final"]
        busy = {name: round(seconds, 1) for name, seconds in sorted(sampler.busy_s.items())}
        state = _checkpointed_state(settings, {envelope_key(orjson.loads(line)) for line in lines[:split]} - {None})
        paced_started = time.time()
        if split < len(lines):  # the rest at a steady rate below the pipeline's capacity: latency without a backlog
            print(f"paced: {len(lines) - split} messages at {args.paced_rate}/s", flush=True)
            with RawPublisher(settings.bootstrap, settings.topics["raw"]) as publisher:
                rate = RateLimit(args.paced_rate)
                for line in lines[split:]:
                    rate.wait()
                    publisher.send(line, envelope_key(orjson.loads(line)))
            wait_caught_up(settings, 3600, on_poll, every_s=1.0)
        sampler.stop()
        raw_published, consume_rate = _read_raw(settings)
        flood, paced = _latencies(settings, raw_published, paced_started)
        cli("pipeline", "stop")
    finally:
        subprocess.run([*CLI, "pipeline", "stop"], env=env, cwd=REPO, timeout=300)
        subprocess.run([*CLI, "stack", "down"], env=env, cwd=REPO, timeout=300)
    result = {
        "machine": f"{os.cpu_count()} cores",
        "input": {"hosts": args.hosts, "days": args.days, "seed": args.seed, "raw_messages": len(lines),
                  "flood_messages": split, "paced_messages": len(lines) - split, "paced_rate_per_s": args.paced_rate},
        "raw_kafka_consume_per_s": round(consume_rate),
        "publish_s": round(published - started, 1),
        "records_stored": stored,
        "end_to_end_s": jobs["end_to_end_s"],
        "end_to_end_records_per_s": round(stored / jobs["end_to_end_s"]) if jobs["end_to_end_s"] else None,
        "jobs": jobs["jobs"],
        "confirmed_caught_up_s": round(done - started, 1),
        "ratio_to_raw_kafka_consume": (round(stored / jobs["end_to_end_s"] / consume_rate, 3)
                                       if jobs["end_to_end_s"] and consume_rate else None),
        "cpu_s_from_publish_to_caught_up": cpu,
        "cpu_us_per_record_stored": {name: round(seconds / stored * 1e6) for name, seconds in cpu.items()} if stored else None,
        "busy_s_per_operator_chain_in_flood (Flink REST busyTimeMsPerSecond)": busy,
        "checkpointed_state_after_flood": state,
        "load_average_1m_at_end": round(os.getloadavg()[0], 1),
        "anomalies": len(flood) + len(paced),
        "latency_s": _summary(flood + paced),
        "latency_s_flood (published as fast as the broker takes it: includes the backlog's queueing)": _summary(flood),
        f"latency_s_paced (the last {args.paced_fraction:.0%} at {args.paced_rate}/s, after the flood caught up)":
            _summary(paced),
        "target": {"records_per_s": 10000, "p99_latency_s": 5},
    }
    from bench.pipeline_verdict import live_figures, verdict

    result["verdict"] = verdict(result, live_figures(REPO / "bench" / "results"))
    out = REPO / "bench" / "results" / "pipeline.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


BUSY_EVERY_S = 5.0


class Progress(threading.Thread):
    """Samples each job's progress once a second: (wall time, {measure: value})."""

    def __init__(self, settings):
        super().__init__(daemon=True)
        self.settings, self.samples, self.halt = settings, [], threading.Event()
        self.busy_s: dict[str, float] = {}  # "job: operator chain" -> busy seconds (all subtasks)

    def _sample_busy(self, rest, seconds: float) -> None:
        for job in rest.jobs():
            if job.active and job.name.startswith("pathwatch-"):
                for vertex, busy_ms in rest.busy_ms_per_s(job.id).items():
                    key = f"{job.name.removeprefix('pathwatch-')}: {vertex[:120]}"
                    self.busy_s[key] = self.busy_s.get(key, 0.0) + busy_ms / 1000 * seconds

    def run(self) -> None:
        import psycopg
        from confluent_kafka import Consumer

        consumers = {group: Consumer({"bootstrap.servers": self.settings.bootstrap, "group.id": group,
                                      "enable.auto.commit": False})
                     for group in ("pathwatch-normalise", "pathwatch-detect")}
        from pathwatch.stack.flink_rest import FlinkRest

        rest = FlinkRest(self.settings.flink_address)
        last = time.time()
        with psycopg.connect(self.settings.database_url, autocommit=True) as connection:
            while not self.halt.is_set():
                now = time.time()
                if now - last >= BUSY_EVERY_S:  # each sample is ~15 REST calls the JobManager answers
                    try:
                        self._sample_busy(rest, now - last)
                    except Exception as error:  # the cluster busy: this interval is not counted
                        print(f"  busy sample failed: {error}", flush=True)
                    last = now
                try:
                    sample = {
                        "normalise": self._committed(consumers["pathwatch-normalise"], "raw"),
                        "detect": self._committed(consumers["pathwatch-detect"], "records"),
                        "store": connection.execute(
                            "SELECT (SELECT count(*) FROM throughput) + (SELECT count(*) FROM latency) "
                            "+ (SELECT count(*) FROM trace)").fetchone()[0],
                        "anomalies": connection.execute("SELECT count(*) FROM anomalies").fetchone()[0],
                        "dead_letters": connection.execute("SELECT count(*) FROM dead_letters").fetchone()[0],
                    }
                    self.samples.append((now, sample))
                except Exception as error:  # a slow or failed sample: the next one counts
                    print(f"  sample failed: {error}", flush=True)
                self.halt.wait(max(0.0, 1.0 - (time.time() - now)))
        for consumer in consumers.values():
            consumer.close()

    def _committed(self, consumer, role: str) -> int:
        from bench.stack_env import committed

        return committed(consumer, self.settings.topics[role])

    def stop(self) -> None:
        self.halt.set()
        self.join()

    def summary(self, started: float) -> dict:
        """Per measure: final value, seconds from the first publish until it was reached, rate."""
        final = self.samples[-1][1]
        jobs = {}
        for measure, value in final.items():
            reached = next(at for at, sample in self.samples if sample[measure] >= value)
            seconds = round(reached - started, 1)
            jobs[measure] = {"final": value, "done_s": seconds, "per_s": round(value / seconds) if seconds > 0 else None}
        # Offsets count transaction markers too (the records topic is written transactionally).
        jobs["detect"]["note"] = "committed offsets of the records topic, transaction markers included"
        end = max(jobs[m]["done_s"] for m in ("store", "anomalies", "dead_letters"))
        return {"jobs": jobs, "end_to_end_s": end}


def _checkpointed_state(settings, paths: set) -> dict:
    """Each job's newest checkpoint size after the flood, and the detect job's per 1,000 paths
    (its keyed state: every path's detectors plus the records still buffered for ordering)."""
    from pathwatch.stack.flink_rest import FlinkRest

    rest = FlinkRest(settings.flink_address)
    sizes = {}
    for job in rest.jobs():
        if job.active and job.name.startswith("pathwatch-"):
            latest = (rest.checkpoints(job.id).get("latest") or {}).get("completed") or {}
            sizes[job.name.removeprefix("pathwatch-")] = latest.get("state_size")
    detect = sizes.get("detect")
    return {"bytes_by_job": sizes, "paths": len(paths),
            "detect_bytes_per_1000_paths": round(detect / len(paths) * 1000) if detect and paths else None}


def _process_stats() -> dict[int, list[str]]:
    """Every live process's /proc/PID/stat fields after the command name, by pid."""
    stats = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stats[int(entry.name)] = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
    return stats


def _cpu_s(fields: list[str]) -> float:
    """User + system CPU seconds of one process from its stat fields."""
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _tree_cpu_s(pid: int, stats: dict[int, list[str]]) -> float:
    """CPU seconds of a process and its descendants."""
    children: dict[int, list[int]] = {}
    for child, fields in stats.items():
        children.setdefault(int(fields[1]), []).append(child)
    total, todo = 0.0, [pid]
    while todo:
        current = todo.pop()
        if current in stats:
            total += _cpu_s(stats[current])
        todo.extend(children.get(current, []))
    return total


# The stack's processes by their pid files (a glob: every TaskManager together); each one's CPU
# counts its whole process tree.
PROCESSES = {"flink jobmanager": "flink-jobmanager", "flink taskmanagers (every job's operators and Python)":
             "flink-taskmanager*", "kafka": "kafka", "postgresql": "timescaledb", "superset": "superset"}


def _cpu_by_process(home: Path) -> dict[str, float]:
    """CPU seconds so far of each of the stack's processes (with their children), of this bench
    (publisher, sampler), of every other live process, and of the machine (all cores) by kind."""
    out, stats = {}, _process_stats()
    for name, pid_name in PROCESSES.items():
        for path in (home / "run").glob(f"{pid_name}.pid"):
            try:
                out[name] = out.get(name, 0.0) + _tree_cpu_s(int(json.loads(path.read_text())["pid"]), stats)
            except (OSError, ValueError, KeyError):
                continue
    out["this bench (publisher, progress sampler)"] = _tree_cpu_s(os.getpid(), stats)
    out["other live processes"] = sum(_cpu_s(fields) for fields in stats.values()) - sum(out.values())
    ticks = os.sysconf("SC_CLK_TCK")
    user, nice, system, idle, iowait, irq, softirq, steal = (int(v) for v in Path("/proc/stat").read_text().split()[1:9])
    out["machine: interrupts (irq + softirq: loopback network)"] = (irq + softirq) / ticks
    out["machine: stolen by the hypervisor"] = steal / ticks
    out["machine busy (all processes)"] = (user + nice + system + irq + softirq + steal) / ticks
    return out


def _accounted(cpu: dict[str, float]) -> dict[str, float]:
    """The CPU seconds of a run with what no live process holds (processes that ended) named too."""
    named = sum(value for name, value in cpu.items() if not name.startswith("machine"))
    kernel = cpu.get("machine: interrupts (irq + softirq: loopback network)", 0.0) + cpu.get("machine: stolen by the hypervisor", 0.0)
    busy = cpu.get("machine busy (all processes)", 0.0)
    return {**cpu, "unaccounted (processes that ended meanwhile)": round(busy - named - kernel, 1)}


def _summary(values: list[float]) -> dict:
    return {"anomalies": len(values), "p50": _pct(values, 50), "p99": _pct(values, 99), "max": _pct(values, 100)}


def _pct(values: list[float], q: float) -> float | None:
    return round(float(np.percentile(values, q)), 2) if values else None


def _consume(bootstrap: str, topic: str, isolation: str = "read_uncommitted"):
    from confluent_kafka import Consumer

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-{uuid.uuid4().hex}",
                         "auto.offset.reset": "earliest", "isolation.level": isolation, "enable.auto.commit": False})
    consumer.subscribe([topic])
    idle = 0
    try:
        while idle < 5:
            batch = consumer.consume(10000, 1.0)
            if not batch:
                idle += 1
                continue
            idle = 0
            yield from (m for m in batch if not m.error())
    finally:
        consumer.close()


def _read_raw(settings) -> tuple[dict[tuple, float], float]:
    """Publish time of every raw message's records by (source, destination, record time), and the
    plain consume rate."""
    started = time.perf_counter()
    messages = list(_consume(settings.bootstrap, settings.topics["raw"]))
    rate = len(messages) / max(time.perf_counter() - started - 5.0, 1e-3)  # minus the idle wait at the end
    published: dict[tuple, float] = {}
    for message in messages:
        for key in record_keys(message.value()):
            published.setdefault(key, message.timestamp()[1] / 1000)
    return published, rate


def record_keys(data: bytes) -> list[tuple]:
    """(source, destination, record time) of each record a raw message gives: what an anomaly's
    path and detection time name when that record raised it."""
    from pathwatch.models.observe import epoch
    from pathwatch.streaming.normalise import RECORD, Origin, normalise

    return [(out.value["source"], out.value["destination"], epoch(out.value["time"]))
            for out in normalise(data, Origin("bench", 0, 0), 0) if out.target == RECORD]


def _latencies(settings, published: dict[tuple, float], paced_started: float) -> tuple[list[float], list[float]]:
    """Latencies of anomalies raised by a record of the flood, and by one of the paced phase."""
    from pathwatch.models.observe import epoch

    first_state: dict[str, tuple[tuple, float]] = {}
    for message in _consume(settings.bootstrap, settings.topics["anomalies"]):
        anomaly = orjson.loads(message.value())
        if anomaly["id"] not in first_state:
            key = (anomaly["source"], anomaly["destination"], epoch(anomaly["detected_at"]))
            first_state[anomaly["id"]] = (key, message.timestamp()[1] / 1000)
    flood, paced = [], []
    for key, emitted in first_state.values():
        if key in published:
            (paced if published[key] >= paced_started else flood).append(emitted - published[key])
    return flood, paced


if __name__ == "__main__":
    main()
