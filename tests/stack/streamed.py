"""One stream through the real pipeline on the test stack, shared by the pipeline, dashboard,
notebook and security tests.

The stream: a simulated mesh published in two halves with the Flink TaskManager killed
(SIGKILL) in between while the jobs are busy, then a new one started by `stack up`, on which
the cluster restarts the jobs from their checkpoints; a
batch of bad inputs (malformed JSON, unknown format, missing fields, absurd values, duplicates,
a record far older than what the detectors already analysed, mildly out-of-order records);
finally one record per path far enough ahead to move the watermark past the data, so the
streaming detectors have judged exactly the span `pathwatch detect --until` judges.

The fixture ``stream`` (module-scoped, imported by tests/conftest.py) hands each module that asks
for it the stream the stack holds, and streams first when it holds none: the first such module of
a session, or the first after a module ran something of its own on the stack (see
tests/stack/shared.py: any order of the modules works). The modules check what the stream did and
look at the result; they change nothing the others look at.

The simulated mesh ends at midnight today, so the dashboards' default "last month" shows it.
Uses the test stack (own home and ports, bench/stack_env.py), fresh topics for each stream
(PATHWATCH_TOPIC_* with the stream's run id) and emptied tables.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import time
import uuid
from datetime import date, timedelta
from pathlib import Path

import orjson
import pytest

from bench.stack_env import CLI, REPO, environment, topic_env, watermark_tails
from pathwatch.db.tables import PIPELINE_TABLES
from pathwatch.stack import config as stack_config

TABLES = PIPELINE_TABLES


def cli(home: Path, *args: str, timeout: float = 900, parallelism: int | None = None,
        env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """``pathwatch ARGS`` on the stack at ``home`` (in ``env``, else with the stack's default
    topics); fails the test with its output when it exits non-zero."""
    env = dict(env or environment(home))
    if parallelism is not None:
        env["PATHWATCH_PIPELINE_PARALLELISM"] = str(parallelism)
    result = subprocess.run([*CLI, *args], env=env, cwd=REPO, capture_output=True, text=True, timeout=timeout)
    if result.returncode != 0:
        pytest.fail(f"pathwatch {' '.join(args)} exited {result.returncode}:\n{result.stderr[-4000:]}\n{result.stdout[-2000:]}")
    return result


def _settings(home: Path, env: dict[str, str]):
    from pathwatch.streaming.settings import from_stack

    return from_stack(stack_config.resolve(home=home, environ=env))


def _wait_caught_up(settings, timeout: float = 600) -> None:
    from pathwatch.streaming.pipeline import PipelineError, wait_caught_up

    try:
        wait_caught_up(settings, timeout, settle=3)
    except PipelineError as error:
        pytest.fail(str(error))


def _publish(settings, messages: list[bytes]) -> None:
    from pathwatch.collector.publish import RawPublisher
    from pathwatch.contract.keys import envelope_key

    with RawPublisher(settings.bootstrap, settings.topics["raw"]) as publisher:
        for body in messages:
            try:
                key = envelope_key(orjson.loads(body))
            except orjson.JSONDecodeError:
                key = None
            publisher.send(body, key)


def _kill_taskmanager(home: Path) -> list[int]:
    """kill -9 of every Flink TaskManager (the JVMs that run the jobs' operators and Python code)."""
    from pathwatch.stack import procs
    from pathwatch.stack.flink import taskmanager_pid_files

    records = [record for path in taskmanager_pid_files(home / "run") if (record := procs.running(path)) is not None]
    assert records, "no Flink TaskManager runs"
    for record in records:
        os.killpg(record.pgid, signal.SIGKILL)
    for _ in range(100):
        if not any(record.alive() for record in records):
            break
        time.sleep(0.1)
    return [record.pid for record in records]


def _rescale(home: Path, env: dict[str, str], settings, parallelism: int) -> dict:
    """Stop every job with a savepoint and start it again at ``parallelism``; what each job reports."""
    from pathwatch.streaming.pipeline import status

    cli(home, "pipeline", "stop", env=env)
    cli(home, "pipeline", "start", parallelism=parallelism, env=env)
    return {"parallelism": parallelism, "jobs": {job.name: job.to_dict() for job in status(settings)}}


def _rows(settings, sql: str, args=()) -> list[tuple]:
    import psycopg

    with psycopg.connect(settings.database_url) as connection:
        return connection.execute(sql, args).fetchall()


# --- the stream ----------------------------------------------------------------------------------

# The extra path's destination, and hop names a tracepath line can hold (no white space or parentheses).
HOSTILE_HOST = "<svg/onload=window.__pwned=1>.untrusted.example"
HOSTILE_HOPS = ("<svg/onload=window.__pwned=1>", "';DROP/**/TABLE/**/anomalies;--", "\u202eevil\u200b👨\u200d👩\u200d👧e\u0301\u0308")


def _hostile(data: list[bytes]) -> list[tuple[int, bytes]]:
    """(index, envelope): traces from the last mesh host to :data:`HOSTILE_HOST`, each to go in
    after the message at ``index`` and stamped with its time (so none arrives late): two tracepath
    runs naming hostile hops, and a pscheduler trace whose hop names and AS owners are
    tests/untrusted.py's three strings (10 kB of Unicode among them)."""
    from tests.untrusted import HOSTILE

    envelopes = [orjson.loads(body) for body in data]
    source = max(e["source"] for e in envelopes if e.get("source"))
    spots = [i for i, e in enumerate(envelopes) if e.get("collected_at")][-400::100][:3]
    out = []
    for n, index in enumerate(spots[:2]):
        hops = "".join(f" {ttl}:  {name}                 0.{ttl}12ms\n" for ttl, name in enumerate(HOSTILE_HOPS[n:] + HOSTILE_HOPS[:n], 1))
        text = f" 1?: [LOCALHOST]                      pmtu 1500\n{hops} 4:  198.18.0.99                 1.500ms reached\n"
        out.append((index, orjson.dumps({"format": "tracepath", "source": source, "destination": HOSTILE_HOST,
                                         "collected_at": envelopes[index]["collected_at"], "payload": text})))
    at = envelopes[spots[2]]["collected_at"]
    hops = [{"ip": f"198.18.0.{i + 1}", "hostname": text, "rtt": "PT0.001S", "as": {"number": 64500 + i, "owner": owner}}
            for i, (text, owner) in enumerate(zip(HOSTILE, reversed(HOSTILE)))] + [{"ip": "198.18.0.99", "rtt": "PT0.002S"}]
    run = {"id": "untrusted", "schedule": {"start": at, "duration": "PT20S"},
           "test": {"type": "trace", "spec": {"schema": 1, "source": source, "dest": HOSTILE_HOST}},
           "tool": {"name": "traceroute", "version": "2.1"}, "participants": [source],
           "result": {"schema": 1, "succeeded": True, "paths": [hops]}}
    out.append((spots[2], orjson.dumps({"format": "pscheduler", "source": source, "destination": HOSTILE_HOST,
                                        "collected_at": at, "payload": run})))
    return out


ARCHIVER_DEST = "ps-archiver.example"


def _archiver_message(data: list[bytes]) -> tuple[int, bytes]:
    """(index, message): a latencybg run on a path of its own, as pScheduler's Kafka archiver
    publishes it (the run object it is handed, as it is: no pathwatch envelope, no key), to go
    in after the message at ``index`` and stamped with its time."""
    envelopes = [orjson.loads(body) for body in data]
    index = [i for i, e in enumerate(envelopes) if e.get("collected_at")][-250]
    source = min(e["source"] for e in envelopes if e.get("source"))
    run = {"id": "archiver-run", "schedule": {"start": envelopes[index]["collected_at"], "duration": "PT60S"},
           "test": {"type": "latencybg", "spec": {"schema": 1, "source": source, "dest": ARCHIVER_DEST,
                                                  "packet-interval": 0.1, "flip": False}},
           "tool": {"name": "powstream", "version": "5.1.0"},
           "participants": [{"host": source}, {"host": ARCHIVER_DEST}],
           "result": {"schema": 1, "succeeded": True, "packets-sent": 600, "packets-received": 598, "packets-lost": 2,
                      "packets-duplicated": 0, "packets-reordered": 0, "max-clock-error": 1.2,
                      "histogram-latency": {"11.10": 300, "11.20": 298}, "histogram-ttl": {"252": 598}}}
    return index, orjson.dumps(run)


def _bad_messages(good: list[bytes]) -> dict[str, list[bytes]]:
    """Bad inputs by what is wrong with them, built from real envelopes of the simulation."""
    envelopes = [orjson.loads(body) for body in good]
    iperf = next(e for e in envelopes if e["format"] == "iperf3")
    missing = json.loads(json.dumps(iperf))
    del missing["payload"]["end"]
    absurd = json.loads(json.dumps(iperf))
    absurd["payload"]["start"]["timestamp"]["timesecs"] = -5  # a run before 1970
    no_time = {key: value for key, value in iperf.items() if key != "collected_at"}
    return {
        "malformed JSON": [b'{"format": "iperf3", "payload": {"start": ', b"\xff\xfe not even text"],
        "unknown format": [orjson.dumps({**iperf, "format": "netflow-v9"})],
        "missing fields": [orjson.dumps(missing), orjson.dumps({"format": "iperf3", "source": "a"})],
        "absurd values": [orjson.dumps(absurd)],
        "no time": [orjson.dumps({**no_time, "payload": "PING x (10.0.0.1) 56(84) bytes of data.\n"})],
    }


@pytest.fixture(scope="module")
def stream(shared_stack, tmp_path_factory) -> dict:
    """The session's stream, as the stack holds it: made now when the stack holds none (see the
    module docstring and tests/stack/shared.py)."""
    return shared_stack.stream(lambda home: _stream(home, tmp_path_factory))


def _stream(home: Path, tmp_path_factory) -> dict:
    """Stream through the real pipeline on the stack at ``home`` (down when called); what was
    published and what the jobs reported, as ``stream`` hands it to the tests."""
    from pathwatch.streaming.normalise import DEAD, Origin, normalise

    run = uuid.uuid4().hex[:8]
    env = environment(home, **topic_env(f"test-{run}"))
    cli(home, "stack", "up", timeout=1500, env=env)
    settings = _settings(home, env)
    cli(home, "db", "migrate", env=env)
    import psycopg

    with psycopg.connect(settings.database_url, autocommit=True) as connection:
        connection.execute(f"TRUNCATE {', '.join(TABLES)}")
    sim = tmp_path_factory.mktemp("sim")
    start = (date.today() - timedelta(days=5)).isoformat() + "T00:00:00Z"
    cli(home, "simulate", "--out", str(sim), "--seed", "515", "--hosts", "7", "--days", "5", "--start", start, env=env)
    cli(home, "db", "hosts", str(sim / "mesh.json"), env=env)
    early = tmp_path_factory.mktemp("early")
    cli(home, "simulate", "--out", str(early), "--seed", "515", "--hosts", "7", "--days", "4",
        "--start", "2025-12-01T00:00:00Z", env=env)
    data = [line for line in (sim / "raw.jsonl").read_bytes().splitlines() if line.strip()]
    hostile = _hostile(data)
    archiver = _archiver_message(data)
    for index, body in sorted([*hostile, archiver], reverse=True):
        data.insert(index + 1, body)
    # Mildly out of order: shuffle within runs of 8 consecutive messages (minutes apart).
    rng = random.Random(515)
    for start in range(0, len(data), 8):
        chunk = data[start:start + 8]
        rng.shuffle(chunk)
        data[start:start + 8] = chunk
    duplicates = data[100:120]
    late = [line for line in (early / "raw.jsonl").read_bytes().splitlines()
            if b'"iperf3"' in line][:1]
    bad = _bad_messages(data)
    half = len(data) // 2

    cli(home, "pipeline", "start", "--fresh", parallelism=1, env=env)
    _publish(settings, data[:half])
    # Kill while busy: once the store job has written something and every job has completed a
    # checkpoint to restore from, before everything is processed.
    from pathwatch.streaming.pipeline import job_lag, status

    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        written = _rows(settings, "SELECT count(*) FROM latency")[0][0]
        if written > 0 and (job_lag(settings, "detect") or job_lag(settings, "store")) \
                and all(job.checkpoint for job in status(settings)):
            break
        time.sleep(0.5)
    killed = _kill_taskmanager(home)
    cli(home, "stack", "up", env=env)        # starts a new TaskManager; the jobs restart from their checkpoints
    cli(home, "pipeline", "start", parallelism=1, env=env)  # finds them all still submitted: starts nothing
    _publish(settings, data[half:] + duplicates)
    _wait_caught_up(settings)
    jobs = {job.name: job.to_dict() for job in status(settings)}  # after the kill, before the rescales
    # Rescale through savepoints: to parallelism 2 (every path's detector state split over two
    # subtasks) while only bad input arrives, and back to 1 before the rest. The anomalies
    # released at the end need every path's restored state. (At parallelism 2 the incidents
    # operator takes the two subtasks' anomalies in arrival order, which can change which
    # incident a state joins: so no anomaly is released at 2 here; see streaming/README.md.)
    rescales = [_rescale(home, env, settings, 2)]
    _publish(settings, [body for bodies in bad.values() for body in bodies])
    _wait_caught_up(settings)
    rescales.append(_rescale(home, env, settings, 1))
    _publish(settings, late)
    # One record per path ahead of the data by more than the ordering delay moves the
    # watermark past the end of the data on every partition.
    from pathwatch.models.observe import epoch

    records = [r for body in data for r in normalise(body, Origin("x", 0, 0), 0) if r.target != DEAD]
    data_end = max(epoch(r.value["time"]) for r in records)
    tails = watermark_tails(data, data_end + settings.ordering_delay_s + 1)
    _publish(settings, tails)
    _wait_caught_up(settings)
    return {"run": run, "env": env, "jobs": jobs, "rescales": rescales, "home": home, "settings": settings,
            "data": data, "duplicates": duplicates, "bad": bad, "late": late, "records": records,
            "data_end": data_end, "tails": tails, "killed": killed, "sim": sim,
            "hostile": [body for _, body in hostile], "archiver": archiver[1]}
