"""Pipeline benchmark: sustained raw → anomaly throughput and measurement-to-anomaly latency.

Runs on the test stack (`.pathwatch/test-stack`, its own ports; brought up and down here, so do
not run it while the stack tests run). Publishes a simulated mesh into fresh topics as fast as
the broker takes it, with the three jobs already running, and measures:

- the raw Kafka consume rate of the same messages (a plain consumer: the reference ceiling),
- end-to-end throughput: canonical records stored per second from the first publish until
  every job has caught up,
- latency per anomaly: the time its first state was written to the anomalies topic minus the
  publish time of the first raw message that let the detectors release it (the first one
  whose time passes the anomaly's detection time plus the ordering delay). Live, the ordering
  delay itself (event time, `pipeline.ordering_delay_s`) comes on top of this.

Writes bench/results/pipeline.json. Usage: python bench/pipeline_bench.py [--hosts 7 --days 7]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import numpy as np
import orjson

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
CLI = [sys.executable, "-c", "from pathwatch.cli import main; main()"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=7)
    parser.add_argument("--days", type=int, default=7)
    parser.add_argument("--seed", type=int, default=4040)
    args = parser.parse_args()

    from tests.test_stack_integration import PORTS, _home

    home = _home()
    home.mkdir(parents=True, exist_ok=True)
    (home / "pathwatch.toml").write_text("".join(
        f"[{table}]\n" + "".join(f"{key} = {value}\n" for key, value in values.items())
        for table, values in PORTS.items()))
    run_id = uuid.uuid4().hex[:8]
    env = {key: value for key, value in os.environ.items() if not key.startswith("PATHWATCH_")}
    env["PATHWATCH_HOME"] = str(home)
    env.update({f"PATHWATCH_TOPIC_{role.upper()}": f"bench-{run_id}.{role}"
                for role in ("raw", "records", "anomalies", "deadletters")})

    def cli(*argv: str) -> None:
        subprocess.run([*CLI, *argv], env=env, cwd=REPO, check=True, timeout=1800)

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
        import psycopg

        with psycopg.connect(settings.database_url, autocommit=True) as connection:
            connection.execute("TRUNCATE throughput, throughput_intervals, latency, trace, trace_hops, anomalies, "
                               "dead_letters, path_hourly, path_daily")
        cli("pipeline", "start", "--fresh")
        lines = [line for line in (sim / "raw.jsonl").read_bytes().splitlines() if line.strip()]
        from pathwatch.ingest.publish import RawPublisher, path_key

        started = time.time()
        with RawPublisher(settings.bootstrap, settings.topics["raw"]) as publisher:
            for line in lines:
                publisher.send(line, path_key(orjson.loads(line)))
        published = time.time()
        wait_caught_up(settings, 3600, lambda lags: print(f"  {time.time() - started:6.0f} s unprocessed {lags}",
                                                          flush=True), every_s=1.0)
        done = time.time()
        with psycopg.connect(settings.database_url) as connection:
            stored = sum(connection.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
                         for t in ("throughput", "latency", "trace"))
        raw_times, consume_rate = _read_raw(settings)
        latencies = _latencies(settings, raw_times)
        cli("pipeline", "stop")
    finally:
        subprocess.run([*CLI, "pipeline", "stop"], env=env, cwd=REPO, timeout=300)
        subprocess.run([*CLI, "stack", "down"], env=env, cwd=REPO, timeout=300)
    result = {
        "machine": f"{os.cpu_count()} cores",
        "input": {"hosts": args.hosts, "days": args.days, "seed": args.seed, "raw_messages": len(lines)},
        "raw_kafka_consume_per_s": round(consume_rate),
        "publish_s": round(published - started, 1),
        "records_stored": stored,
        "end_to_end_s": round(done - started, 1),
        "end_to_end_records_per_s": round(stored / (done - started)),
        "anomalies": len(latencies),
        "latency_s": {"p50": _pct(latencies, 50), "p99": _pct(latencies, 99), "max": _pct(latencies, 100)},
        "ordering_delay_s (event time, live only)": settings.ordering_delay_s,
        "target": {"records_per_s": 10000, "p99_latency_s": 5},
    }
    out = REPO / "bench" / "results" / "pipeline.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


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


def _read_raw(settings) -> tuple[list[tuple[float, float]], float]:
    """(collected_at epoch, publish epoch) of every raw message, and the plain consume rate."""
    from pathwatch.models.observe import epoch

    started, count, times = time.perf_counter(), 0, []
    messages = list(_consume(settings.bootstrap, settings.topics["raw"]))
    rate = len(messages) / max(time.perf_counter() - started - 5.0, 1e-3)  # minus the idle wait at the end
    for message in messages:
        count += 1
        envelope = orjson.loads(message.value())
        if envelope.get("collected_at"):
            times.append((epoch(envelope["collected_at"]), message.timestamp()[1] / 1000))
    times.sort()
    return times, rate


def _latencies(settings, raw_times: list[tuple[float, float]]) -> list[float]:
    from pathwatch.models.observe import epoch

    first_state: dict[str, tuple[float, float]] = {}
    for message in _consume(settings.bootstrap, settings.topics["anomalies"]):
        anomaly = orjson.loads(message.value())
        if anomaly["id"] not in first_state:
            first_state[anomaly["id"]] = (epoch(anomaly["detected_at"]), message.timestamp()[1] / 1000)
    collected = np.array([t for t, _ in raw_times])
    published = np.array([p for _, p in raw_times])
    out = []
    for detected_at, emitted in first_state.values():
        index = int(np.searchsorted(collected, detected_at + settings.ordering_delay_s))
        if index < len(collected):
            out.append(emitted - float(published[index:].min()))
    return out


if __name__ == "__main__":
    main()
