"""Live latency benchmark: results published at their real cadence, publish → anomaly on its topic.

Runs on the test stack (`.pathwatch/test-stack`, its own ports; brought up and down here, so do
not run it while the stack tests or the other pipeline bench run). Two simulated meshes:

- the **probe** mesh (``--hosts``, realistic cadences: a latency window every 60 s, traces every
  5 minutes, tracepath every 15, throughput hourly) with four days of history (the loss detector
  judges after three), then faults timed to be named in its last ``--live-minutes`` (a loss
  step, a latency shift, two route changes, each on its own path; ``ONSETS``). Its history is
  published as a flood first (the detectors learn each path); once the pipeline caught up, the
  live part follows in real time;
- a dense, fault-free **load** mesh (``--load-hosts``, one latency window every ``--load-latency-s``,
  traces every 10 s) over the same minutes, interleaved with the probe's live part, so the
  pipeline judges the probes while it takes ``--load-hosts`` × (hosts − 1) paths' worth of
  measurements per second (the achieved rate is reported). Its hosts are renamed ``load-…``.

Every live message is published when its result was collected (``collected_at``, shifted by a
constant to the wall clock: the pipeline sees the real inter-arrival times; the record times
stay the simulation's). Latency of an anomaly = the moment a read-committed consumer of the
anomalies topic received its first state − the publish of the record that raised it (the probe
record of its path whose time is the anomaly's detection time). It covers normalise, the records
topic's commit at normalise's checkpoint, the detect job's ordering and detectors, and the
anomalies topic. Anomalies raised by a deadline (silence), with no record of their own, are
counted apart. Also: each consumer group's lag during the live part (sampled every 5 s) and the
CPU seconds of every process over it.

Writes bench/results/live.json. Usage: python bench/live_bench.py [--live-minutes 10 --load-hosts 40]
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

import orjson

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from bench.stack_env import CLI  # noqa: E402  (the repository on the path first)
PROBE_START = "2026-03-01T00:00:00Z"
PROBE_DAYS = 4
LAG_EVERY_S = 5.0
# Fault onsets relative to the live part's start (s): a loss step is named after hours of
# evidence and a latency shift after about half an hour, so they begin before the live part to
# be named in it; a route change shows on the first trace after it (traces every 5 minutes).
ONSETS = (-30000, (-1500, -1380, -1260, -1140), (60, 180, 300, 420))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=5, help="hosts of the probe mesh")
    parser.add_argument("--seed", type=int, default=5203)
    parser.add_argument("--live-minutes", type=float, default=10.0)
    parser.add_argument("--load-hosts", type=int, default=40, help="hosts of the load mesh (0: none)")
    parser.add_argument("--load-latency-s", type=int, default=2, help="latency window of the load mesh's paths")
    args = parser.parse_args()

    from bench.pipeline_bench import _accounted, _cpu_by_process, _summary, record_keys
    from bench.stack_env import bench_stack

    probe_history, probe_live, faults, live_start, live_end = _probe(args)
    print(f"probe: {len(probe_history)} history + {len(probe_live)} live messages; faults {faults}", flush=True)
    load = _load(args, live_start, live_end)
    print(f"load: {len(load)} live messages ({len(load) / (live_end - live_start):.0f}/s)", flush=True)

    home, env, cli = bench_stack("live")

    cli("stack", "up")
    try:
        os.environ.update(env)
        from pathwatch.collector.publish import RawPublisher
        from pathwatch.contract.keys import envelope_key
        from pathwatch.stack.config import resolve
        from pathwatch.streaming.pipeline import wait_caught_up
        from pathwatch.streaming.settings import from_stack

        settings = from_stack(resolve(home=home))
        cli("db", "migrate")
        cli("pipeline", "start", "--fresh")
        anomalies = AnomalyReader(settings)
        anomalies.start()
        print("history: publishing as fast as the broker takes it", flush=True)
        with RawPublisher(settings.bootstrap, settings.topics["raw"]) as publisher:
            for line in probe_history:
                publisher.send(line.data, envelope_key(orjson.loads(line.data)))
        wait_caught_up(settings, 3600, lambda lags: print(f"  unprocessed {lags}", flush=True), every_s=2.0)

        # (collected_at, message, its Kafka key, its records' keys if a probe's), in collection order
        live = sorted([(line.collected_at, line.data, envelope_key(orjson.loads(line.data)), record_keys(line.data))
                       for line in probe_live]
                      + [(collected, data, envelope_key(orjson.loads(data)), ()) for collected, data in load],
                      key=lambda item: item[0])
        lags = LagSampler(settings)
        lags.start()
        cpu_before = _cpu_by_process(home)
        published: dict[tuple, float] = {}     # (source, destination, record time) -> publish wall time
        started = time.time()
        shift = started - live_start
        print(f"live: {len(live)} messages over {args.live_minutes} min", flush=True)
        with RawPublisher(settings.bootstrap, settings.topics["raw"]) as publisher:
            index, reported = 0, started
            while index < len(live):
                now = time.time()
                while index < len(live) and live[index][0] + shift <= now:
                    _, data, kafka_key, keys = live[index]
                    sent = time.time()
                    publisher.send(data, kafka_key)
                    for key in keys:
                        published[key] = sent
                    index += 1
                if now - reported >= 60:
                    print(f"  {now - started:5.0f} s: {index} published, lag {lags.latest()}", flush=True)
                    reported = now
                if index < len(live):
                    time.sleep(max(0.0, min(0.05, live[index][0] + shift - time.time())))
        ended = time.time()
        time.sleep(30.0)             # the last anomalies: a checkpoint or two
        cpu_after = _cpu_by_process(home)
        lags.stop()
        anomalies.stop()
        cli("pipeline", "stop")
    finally:
        subprocess.run([*CLI, "pipeline", "stop"], env=env, cwd=REPO, timeout=300)
        subprocess.run([*CLI, "stack", "down"], env=env, cwd=REPO, timeout=300)

    by_record, by_deadline, by_kind = [], [], {}
    for received, anomaly in anomalies.first_states.values():
        if anomaly["source"].startswith("load-") or received < started:
            continue
        from pathwatch.models.observe import epoch

        key = (anomaly["source"], anomaly["destination"], epoch(anomaly["detected_at"]))
        if key in published:
            latency = received - published[key]
            by_record.append(latency)
            by_kind.setdefault(anomaly["kind"], []).append(latency)
        else:
            by_deadline.append(anomaly["kind"])
    cpu = _accounted({name: round(cpu_after[name] - cpu_before.get(name, 0.0), 1) for name in cpu_after})
    seconds = ended - started
    result = {
        "machine": f"{os.cpu_count()} cores",
        "input": {"probe_hosts": args.hosts, "probe_days_of_history": PROBE_DAYS, "seed": args.seed,
                  "history_messages": len(probe_history), "live_minutes": args.live_minutes,
                  "live_probe_messages": len(probe_live), "faults": faults,
                  "load_hosts": args.load_hosts, "load_latency_window_s": args.load_latency_s,
                  "live_load_messages": len(load)},
        "live_messages_per_s": round(len(live) / (live_end - live_start), 1),
        "publish_took_s (the live span's length, plus what the publisher fell behind)": round(seconds, 1),
        "latency_s_publish_to_anomaly": _summary(by_record),
        "latency_s_by_kind": {kind: _summary(values) for kind, values in sorted(by_kind.items())},
        "anomalies_raised_by_a_deadline (no record of their own)": sorted(by_deadline),
        "consumer_lag_messages_during_live": lags.summary(),
        "cpu_s_during_live": cpu,
        "cpu_share_of_machine_during_live": round(cpu.get("machine busy (all processes)", 0.0) / seconds / (os.cpu_count() or 1), 2),
        "ordering": {"delay_s": settings.ordering_delay_s, "slack_s": settings.ordering_slack_s,
                     "checkpoint_interval_s": settings.checkpoint_interval_s},
        "target": {"p99_latency_s": 5, "at_measurements_per_s": 1000},
    }
    out = REPO / "bench" / "results" / "live.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


def _probe(args, onsets=None):
    """The probe mesh's history and live lines, the faults placed in the live part, the live span."""
    from pathwatch.sim.config import Cadences, SimConfig
    from pathwatch.sim.generate import envelope_lines, plan
    from pathwatch.sim.episode import Episode

    cadences = Cadences(latency_s=60, latency_packets=600, trace_s=300, tracepath_s=900, throughput_s=3600,
                        throughput_jitter_s=120, throughput_run_s=10)
    base = plan(SimConfig(seed=args.seed, hosts=args.hosts, days=PROBE_DAYS, cadences=cadences, start_text=PROBE_START,
                          benign_only=True))
    live_end = base.config.start + PROBE_DAYS * 86400
    live_start = live_end - int(args.live_minutes * 60)
    paths = base.mesh.paths
    loss_onset, shift_onsets, route_onsets = onsets or ONSETS
    episodes = [Episode("loss_step", paths[5].src.name, paths[5].dst.name, live_start + loss_onset, None, {"loss": 0.05})]
    episodes += [Episode("latency_shift", paths[index].src.name, paths[index].dst.name, live_start + onset, None,
                         {"owd_delta_ms": 12.0, "rtt_delta_ms": 12.0, "from_ttl": 3})
                 for index, onset in zip((1, 3, 6, 9), shift_onsets)]
    episodes += [Episode("route_change", paths[index].src.name, paths[index].dst.name, live_start + onset, None,
                         {"rtt_delta_ms": 4.0, "owd_delta_ms": 3.5, "diverge_ttl": len(paths[index].route) // 2,
                          "new_as": "transit", "extra_hops": 1})
                 for index, onset in zip((2, 7, 10, 13), route_onsets)]
    sim = base.with_episodes(episodes)
    lines = list(envelope_lines(sim))
    history = [line for line in lines if line.collected_at < live_start]
    live = [line for line in lines if live_start <= line.collected_at < live_end]
    faults = [{"kind": e.kind, "path": f"{e.src}>{e.dst}", "onset_s_after_live_start": e.start - live_start}
              for e in episodes]
    return history, live, faults, live_start, live_end


def _load(args, live_start: int, live_end: int) -> list[tuple[int, bytes]]:
    """The dense load mesh's (collected_at, message) over the live span, hosts renamed load-…."""
    if args.load_hosts <= 0:
        return []
    from pathwatch.contract.timefmt import from_epoch
    from pathwatch.sim.config import Cadences, SimConfig
    from pathwatch.sim.generate import plan, window_lines

    cadences = Cadences(latency_s=args.load_latency_s, latency_packets=10 * args.load_latency_s, trace_s=10,
                        tracepath_s=30, throughput_s=60, throughput_jitter_s=5, throughput_run_s=10)
    sim = plan(SimConfig(seed=args.seed + 1, hosts=args.load_hosts, days=1, cadences=cadences,
                         start_text=from_epoch(live_start - 3600), benign_only=True))
    out = []
    for line in window_lines(sim, live_start, live_end):
        if line.collected_at < live_end:
            envelope = orjson.loads(line.data)
            envelope["source"], envelope["destination"] = f"load-{envelope['source']}", f"load-{envelope['destination']}"
            out.append((line.collected_at, orjson.dumps(envelope)))
    return out


class AnomalyReader(threading.Thread):
    """Reads the anomalies topic (read committed) as it fills: each id's first state and when it came."""

    def __init__(self, settings):
        super().__init__(daemon=True)
        self.settings, self.halt = settings, threading.Event()
        self.first_states: dict[str, tuple[float, dict]] = {}

    def run(self) -> None:
        from confluent_kafka import Consumer

        consumer = Consumer({"bootstrap.servers": self.settings.bootstrap, "group.id": f"live-bench-{uuid.uuid4().hex}",
                             "auto.offset.reset": "earliest", "isolation.level": "read_committed",
                             "enable.auto.commit": False, "fetch.wait.max.ms": 50})
        consumer.subscribe([self.settings.topics["anomalies"]])
        try:
            while not self.halt.is_set():
                for message in consumer.consume(1000, 0.1):
                    if message.error():
                        continue
                    received = time.time()
                    anomaly = orjson.loads(message.value())
                    self.first_states.setdefault(anomaly["id"], (received, anomaly))
        finally:
            consumer.close()

    def stop(self) -> None:
        self.halt.set()
        self.join()


class LagSampler(threading.Thread):
    """Each job's consumer lag (messages not yet committed) every few seconds."""

    def __init__(self, settings):
        super().__init__(daemon=True)
        self.settings, self.halt, self.samples = settings, threading.Event(), []

    def run(self) -> None:
        from pathwatch.streaming.pipeline import job_lag

        while not self.halt.wait(LAG_EVERY_S):
            try:
                self.samples.append({job: job_lag(self.settings, job) for job in ("normalise", "detect")})
            except Exception as error:     # a slow poll: the next one counts
                print(f"  lag sample failed: {error}", flush=True)

    def latest(self) -> dict | None:
        return self.samples[-1] if self.samples else None

    def summary(self) -> dict:
        return {job: {"max": max((s[job] for s in self.samples), default=None),
                      "last": self.samples[-1][job] if self.samples else None} for job in ("normalise", "detect")}

    def stop(self) -> None:
        self.halt.set()
        self.join()


if __name__ == "__main__":
    main()
