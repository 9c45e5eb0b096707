"""Floor benchmark: what each stage of the pipeline's shape costs on this machine, measured alone.

The pipeline bench measures the whole pipeline; this one measures the shape it is built from, so
the figures say which part of a record's cost any design in that shape must pay. On the test
stack (brought up and down here: take the stack lock), it publishes a simulated mesh into a
fresh raw topic once, then drains it with one Flink job at a time (``bench/floor_job.py``), each
with its own consumer group and output topics, written exactly once as the pipeline writes
them:

- ``sql_copy``: Flink SQL copies each message (no Python): the cluster's and Kafka's floor;
- ``python_copy``: the normalise job's graph with the parse left out (its table → stream →
  Python flat map → table conversions, thread mode): the floor of a hop through Python;
- ``normalise``, ``detect``, ``store``: the pipeline's jobs, each alone (detect and store read
  what normalise wrote);
- ``together``: the three at once on fresh topics, as the pipeline runs them.

Per shape: messages/s and CPU µs per message of every process (JobManager, TaskManagers, Kafka,
PostgreSQL, the bench, the machine), over the steady part of the drain (from 10 % to 95 % of the
topic read, by the job's committed offsets sampled each second: a fresh job's first seconds are
its JVM classes loading and compiling), and over the whole run. A plain consumer's rate on the
same topic is the reference. The ``budget`` section sets these floors against issue 17's 200 µs per measurement
(10k/s on the whole machine's two cores).

Writes bench/results/floor.json; ~20 minutes. Usage:
python bench/floor_bench.py [--hosts 7 --days 56 --shapes sql_copy python_copy ... --no-together]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import orjson

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from bench.floor_job import SHAPES  # noqa: E402  (the repository on the path first)

BUDGET_US = 2 * 1e6 / 10_000  # two cores' CPU-µs per measurement at 10k measurements/s
STEADY = (0.10, 0.95)         # the part of the drain the figures are taken over
NEAR_END = 0.999              # read this much, a drain asks the consumer lag whether it is done
READS_RECORDS = {"detect", "store"}  # shapes reading the normalise shape's records, not the raw topic
JOBS = ("normalise", "detect", "store")  # the pipeline's jobs, in the order records flow


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=7)
    parser.add_argument("--days", type=int, default=56, help="days of the simulated mesh (the drains' length)")
    parser.add_argument("--seed", type=int, default=4040)
    parser.add_argument("--shapes", nargs="+", default=list(SHAPES), choices=SHAPES,
                        help="the job shapes to drain alone, in this order (detect and store need normalise first)")
    parser.add_argument("--timeout", type=float, default=1200, help="seconds one drain may take")
    parser.add_argument("--no-together", dest="together", action="store_false",
                        help="leave out the last run: normalise, detect and store at once, as the pipeline runs")
    args = parser.parse_args()
    shapes = args.shapes
    for shape in READS_RECORDS & set(shapes):
        if "normalise" not in shapes[:shapes.index(shape)]:
            parser.error(f"--shapes: {shape} reads the records the normalise shape writes; put normalise before it")

    from bench.stack_env import bench_stack, empty_pipeline_tables

    home, env, cli = bench_stack("floor")
    sim = home / "bench-sim" / f"{args.seed}-{args.hosts}h-{args.days}d"
    if not (sim / "raw.jsonl").exists():
        cli("simulate", "--out", str(sim), "--seed", str(args.seed), "--hosts", str(args.hosts), "--days", str(args.days))
    cli("stack", "up")
    results = {}
    try:
        os.environ.update(env)
        from pathwatch.collector.publish import RawPublisher
        from pathwatch.contract.keys import envelope_key
        from pathwatch.stack import kafka
        from pathwatch.stack.config import resolve
        from pathwatch.streaming.settings import from_stack

        config = resolve(home=home)
        settings = from_stack(config)
        lines = [line for line in (sim / "raw.jsonl").read_bytes().splitlines() if line.strip()]
        print(f"publishing {len(lines)} raw messages to {settings.topics['raw']}", flush=True)
        with RawPublisher(settings.bootstrap, settings.topics["raw"]) as publisher:
            for line in lines:
                publisher.send(line, envelope_key(orjson.loads(line)))
        reference = _plain_consume_rate(settings)
        print(f"a plain consumer reads {reference:.0f} messages/s", flush=True)
        spec = kafka.topics(config)[settings.topics["records"]]
        raw = settings.topics["raw"]

        def shape_job(shape: str, name: str, records: str) -> Job:
            """The shape's job reading raw (or ``records``, for detect and store), writing topics of its own."""
            topics = {**settings.topics, "records": records,
                      **{role: f"{raw}.{name}.{role}" for role in ("anomalies", "deadletters")}}
            kafka.create_topics(settings.bootstrap, {topics[role]: spec for role in ("records", "anomalies", "deadletters")},
                                config=config)
            job_settings = dataclasses.replace(settings, topics=topics)
            if shape == "store":  # its own checkpoint interval, as in the pipeline
                job_settings = dataclasses.replace(job_settings, checkpoint_interval_s=settings.store_checkpoint_interval_s)
            return Job(shape, name, job_settings, records if shape in READS_RECORDS else raw)

        for shape in shapes:  # detect and store read what the normalise shape wrote
            records = f"{raw}.floor-normalise" if shape in READS_RECORDS else f"{raw}.floor-{shape}"
            if shape == "store":
                empty_pipeline_tables(settings.database_url)  # so it inserts rather than updates
            results[shape] = drain([shape_job(shape, f"floor-{shape}", records)], home, args.timeout)
            print(json.dumps({shape: results[shape]}, indent=2), flush=True)
        if args.together:
            empty_pipeline_tables(settings.database_url)
            jobs = [shape_job(shape, f"floor-together-{shape}", f"{raw}.together") for shape in JOBS]
            results["together"] = drain(jobs, home, args.timeout)
            print(json.dumps({"together": results["together"]}, indent=2), flush=True)
    finally:
        subprocess.run([sys.executable, "-c", "from pathwatch.cli import main; main()", "stack", "down"],
                       env=env, cwd=REPO, timeout=300)
    result = {
        "machine": f"{os.cpu_count()} cores",
        "input": {"hosts": args.hosts, "days": args.days, "seed": args.seed,
                  "raw_messages": len(lines), "bytes_per_message": round(sum(map(len, lines)) / len(lines))},
        "plain_kafka_consume_per_s": round(reference),
        "steady_part_of_the_drain": list(STEADY),
        "shapes": results,
        "budget": budget(results),
    }
    out = REPO / "bench" / "results" / "floor.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result["budget"], indent=2))


@dataclasses.dataclass(frozen=True)
class Job:
    """One floor job to run: its shape, its name (checkpoints, logs, consumer group), its
    settings (topics) and the topic whose reading measures its progress."""

    shape: str
    name: str
    settings: object
    reads: str


def drain(jobs: list[Job], home: Path, timeout: float) -> dict:
    """Submit the jobs, sample their progress and every process's CPU each second until each
    read the whole of its topic, cancel them. Figures per message the first
    job reads: over the steady part of its drain, and over the whole run from the first
    submission until the last job was done (per message read: transaction markers in a
    transactionally written topic count as messages)."""
    from bench.pipeline_bench import _accounted, _cpu_by_process

    from pathwatch.stack.flink_rest import FlinkRest
    from pathwatch.streaming.settings import write_file

    rest = FlinkRest(jobs[0].settings.flink_address)
    started = time.time()
    cpu_before = _cpu_by_process(home)
    ids = [_submit(job.settings, job.shape, job.name, write_file(job.settings)) for job in jobs]
    progress = {job.name: [] for job in jobs}  # (wall time, messages read)
    cpu = []                                     # (wall time, CPU seconds by process)
    watches = [_Committed(job.settings, job.reads, f"pathwatch-{job.name}") for job in jobs]
    try:
        done = set()
        while len(done) < len(jobs):
            now = time.time()
            cpu.append((now, _cpu_by_process(home)))
            for job, watch in zip(jobs, watches):
                read, total = watch.read(), watch.end()
                progress[job.name].append((now, read))
                upstream_done = all(earlier.name in done for earlier in jobs[:jobs.index(job)])
                if job.name not in done and upstream_done and watch.caught_up(read, total):
                    done.add(job.name)
                if len(cpu) % 10 == 0:
                    print(f"  {job.name}: {now - started:5.0f} s, {read} of {total} read", flush=True)
            if now - started > timeout:
                raise SystemExit(f"floor bench: {', '.join(job.name for job in jobs)} not done in {timeout:.0f} s")
            time.sleep(max(0.0, 1.0 - (time.time() - now)))
    finally:
        for watch in watches:
            watch.close()
        for job_id in ids:
            rest.cancel(job_id)
            rest.wait_ended(job_id)
    lead = progress[jobs[0].name]
    total = lead[-1][1]
    first = next(i for i, (_, read) in enumerate(lead) if read >= STEADY[0] * total)
    last = next(i for i, (_, read) in enumerate(lead) if read >= STEADY[1] * total)
    messages, seconds = lead[last][1] - lead[first][1], lead[last][0] - lead[first][0]
    steady = _accounted({name: cpu[last][1][name] - cpu[first][1].get(name, 0.0) for name in cpu[last][1]})
    whole = _accounted({name: cpu[-1][1][name] - cpu_before.get(name, 0.0) for name in cpu[-1][1]})
    return {"messages_per_s": round(messages / seconds), "steady_s": round(seconds, 1), "steady_messages": messages,
            "cpu_us_per_message": {name: round(value / messages * 1e6) for name, value in steady.items()},
            "whole_run_s": round(cpu[-1][0] - started, 1),
            "whole_run_cpu_us_per_message": {name: round(value / total * 1e6) for name, value in whole.items()}}


def budget(results: dict) -> dict:
    """The floors against 200 µs of machine CPU per measurement (10k/s on two cores).

    >>> figures = lambda us: {"cpu_us_per_message": {"machine busy (all processes)": us}}
    >>> out = budget({"sql_copy": figures(35), "python_copy": figures(60), "normalise": figures(200),
    ...               "detect": figures(300), "store": figures(100)})
    >>> out["python_crossing_us"], out["parse_us"], out["jobs_alone_us"], out["jobs_alone_max_per_s"]
    (25, 140, 600, 3333)
    >>> budget({**{job: figures(200) for job in JOBS}, "together": {**figures(900), "messages_per_s": 2000}})[
    ...     "together_over_alone_us"]
    300
    """
    machine = {shape: figures["cpu_us_per_message"]["machine busy (all processes)"] for shape, figures in results.items()}
    out = {"machine_cpu_us_per_measurement_at_10k_per_s": BUDGET_US, "machine_cpu_us_per_message": machine}
    if "sql_copy" in machine:
        out["one_kafka_flink_kafka_hop_share_of_budget"] = round(machine["sql_copy"] / BUDGET_US, 2)
    if {"sql_copy", "python_copy"} <= machine.keys():
        out["python_crossing_us"] = machine["python_copy"] - machine["sql_copy"]
    if {"python_copy", "normalise"} <= machine.keys():
        out["parse_us"] = machine["normalise"] - machine["python_copy"]
    jobs = JOBS
    if set(jobs) <= machine.keys():  # one record through each job, each measured alone
        total = sum(machine[job] for job in jobs)
        out["jobs_alone_us"] = total
        out["jobs_alone_max_per_s"] = round(2 * 1e6 / total)
        out["jobs_alone_share_of_budget"] = {job: round(machine[job] / BUDGET_US, 2) for job in jobs}
        if "together" in machine:  # the same three jobs at once, as the pipeline runs them
            out["together_us"] = machine["together"]
            out["together_messages_per_s"] = results["together"]["messages_per_s"]
            out["together_over_alone_us"] = machine["together"] - total
    return out


class _Committed:
    """A consumer group's progress on a topic: committed offsets and the topic's end, summed over
    its partitions."""

    def __init__(self, settings, topic: str, group: str):
        from confluent_kafka import Consumer

        self.settings, self.topic, self.group = settings, topic, group
        self.consumer = Consumer({"bootstrap.servers": settings.bootstrap, "group.id": group, "enable.auto.commit": False})

    def close(self) -> None:
        self.consumer.close()

    def read(self) -> int:
        from bench.stack_env import committed

        return committed(self.consumer, self.topic)

    def end(self) -> int:
        """The topic's end offsets, summed (everything written so far, markers included)."""
        from confluent_kafka import TopicPartition

        partitions = self.consumer.list_topics(self.topic, timeout=10).topics[self.topic].partitions
        return sum(self.consumer.get_watermark_offsets(TopicPartition(self.topic, p), timeout=10)[1] for p in partitions)

    def caught_up(self, read: int, total: int) -> bool:
        """Whether the group read the whole topic. Offsets count transaction markers, and the last
        ones (a cancelled writer's open transaction) may stay unread for minutes, so near the end
        the pipeline's own lag, which reads past markers, decides (it probes the partitions, so it
        is asked only there)."""
        from pathwatch.streaming.pipeline import consumer_lag

        if read >= total:
            return True
        return read >= NEAR_END * total and consumer_lag(self.settings.bootstrap, self.group, self.topic) == 0


def _submit(settings, shape: str, name: str, settings_file: Path) -> str:
    """Submit the shape's job under ``name`` with Flink's client; its Flink job id."""
    from pathwatch.stack import flink
    from pathwatch.stack.config import resolve
    from pathwatch.streaming.pipeline import _SUBMITTED

    command = [str(flink.distribution() / "bin" / "flink"), "run", "--detached", "-m", settings.flink_address,
               "--python", str(REPO / "bench" / "floor_job.py"), "-pyexec", sys.executable,
               "-pyclientexec", sys.executable, str(settings_file), shape, name]
    done = subprocess.run(command, env=flink.job_environment(resolve(home=Path(settings.home))), capture_output=True,
                          text=True, timeout=300)
    found = _SUBMITTED.search(done.stdout + done.stderr)
    if done.returncode != 0 or found is None:
        told = [line for line in (done.stdout + done.stderr).splitlines() if not line.startswith(("\tat ", "\t..."))]
        raise SystemExit(f"floor bench: submitting {shape} failed (client exit {done.returncode}):\n"
                         + "\n".join(told[-40:]))
    return found.group(1)


def _plain_consume_rate(settings) -> float:
    """Messages/s a plain consumer (confluent-kafka) reads the raw topic at."""
    from bench.pipeline_bench import _consume

    started, count = time.perf_counter(), 0
    for _ in _consume(settings.bootstrap, settings.topics["raw"]):
        count += 1
    return count / max(time.perf_counter() - started - 5.0, 1e-3)  # minus the idle wait at the end


if __name__ == "__main__":
    main()
