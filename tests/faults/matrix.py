"""The fault matrix: the real pipeline streams a labelled mesh while one component fails at a time.

Shared by ``tests/faults/test_fault_matrix.py`` (short outages, run by CI) and
``bench/faults_bench.py`` (5-minute outages, ``bench/results/faults.json``). On the test stack
(its own home and ports), with fresh topics and emptied tables, the run:

1. brings the stack up with tickets enabled and an empty RT (Kafka, TimescaleDB, Flink, Superset, RT, Alertmanager),
   starts the pipeline at parallelism 1 and the tickets service (``pathwatch tickets run``);
2. for each fault in :data:`FAULTS`, publishes the next slice of the mesh at a steady rate (plus
   a few bad inputs), injects the fault a third of the way in, keeps it for its outage, recovers
   the way an operator would (``pathwatch stack up``, ``pipeline start``, restarting the
   service), waits until the pipeline has caught up, and reconciles by id: every record of every
   message published so far is stored, every bad input is a dead letter, nothing else;
3. finally moves the watermark past the data so the streaming detectors judged exactly what
   ``pathwatch detect --until`` judges.

What is checked after the run (by the test, written to the bench file): the per-fault
reconciliation, the records topic holding each record once, the anomalies equal to the offline
run, and the tickets (each anomaly the policy tickets is held by exactly one ticket, the same
anomalies as a fault-free replay ticket, no two open tickets for one problem, a ticket open
exactly while one of its anomalies is open).

The Python operators run inside the TaskManager's JVM (PyFlink thread mode), so killing the
TaskManager is also killing the Python worker: there is no separate worker process to kill.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
import uuid
from collections import Counter
from dataclasses import asdict, dataclass, field
from datetime import date, timedelta
from pathlib import Path
from typing import Callable

import orjson

from bench.stack_env import CLI, REPO, run_env, watermark_tails
from pathwatch.db.tables import PIPELINE_TABLES

TABLES = (*PIPELINE_TABLES, "anomaly_tickets")
# The faults in the order they are injected; see :class:`FaultRun` for what each does.
FAULTS = ("kill_kafka", "kill_postgres", "kill_jobmanager", "kill_taskmanager", "kill_tickets_service",
          "stop_postgres", "stop_rt")


class FaultRunError(RuntimeError):
    """The run could not go on (a command failed, or the pipeline did not recover in time)."""


@dataclass
class FaultOutcome:
    """What one fault did: how long the component was down, how long the pipeline took to catch
    up after the recovery step, what a user saw meanwhile, and the reconciliation afterwards."""

    fault: str
    recovery: str                      # what brought it back
    down_s: float = 0.0                # from the fault until the recovery step finished
    caught_up_s: float = 0.0           # from the recovery step until everything published is stored
    published_while_down: int = 0      # messages of this slice published between the fault and the recovery
    published: int = 0                 # messages published so far (all slices)
    records_expected: int = 0
    records_stored: int = 0
    missing: int = 0                   # expected records not stored
    unexpected: int = 0                # stored records no published message gives
    dead_letters_expected: int = 0
    dead_letters: int = 0
    seen: list[str] = field(default_factory=list)   # distinct lines of `stack status` / `pipeline status`

    @property
    def reconciled(self) -> bool:
        return (self.missing == 0 and self.unexpected == 0 and self.records_stored == self.records_expected
                and self.dead_letters == self.dead_letters_expected)

    def to_dict(self) -> dict:
        return {**asdict(self), "reconciled": self.reconciled}


def bad_inputs(slice_no: int) -> list[bytes]:
    """Inputs the normalise job must dead-letter (distinct per slice, so each is counted once)."""
    return [f'{{"format": "iperf3", "payload": {{"start": {slice_no}'.encode(),
            orjson.dumps({"format": "netflow-v9", "source": f"bad{slice_no}.example", "payload": {}}),
            orjson.dumps({"format": "iperf3", "source": f"bad{slice_no}.example"})]


def read_topic(bootstrap: str, topic: str, group: str, idle_polls: int = 5):
    """The values of every committed message on ``topic`` from the start, until it stays quiet
    for ``idle_polls`` one-second polls."""
    from confluent_kafka import Consumer

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                         "isolation.level": "read_committed", "enable.auto.commit": False})
    consumer.subscribe([topic])
    idle = 0
    try:
        while idle < idle_polls:
            message = consumer.poll(1.0)
            if message is None:
                idle += 1
            elif not message.error():
                idle = 0
                yield message.value()
    finally:
        consumer.close()


class Paced:
    """Publishes ``messages`` to the raw topic at ``rate`` per second in a thread; ``done`` counts."""

    def __init__(self, settings, messages: list[bytes], rate: float):
        self.settings, self.messages, self.rate = settings, messages, rate
        self.done = 0
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, name="faults-publisher", daemon=True)

    def start(self) -> "Paced":
        self.thread.start()
        return self

    def _run(self) -> None:
        from pathwatch.collector.publish import RawPublisher
        from pathwatch.contract.keys import envelope_key

        try:
            # Kafka may be away for a while: keep each message up to 15 minutes before failing,
            # and leave the broker's absence to the run's own log (no line per reconnect).
            with RawPublisher(self.settings.bootstrap, self.settings.topics["raw"],
                              {"message.timeout.ms": 900_000, "log_level": 2}) as publisher:
                started = time.monotonic()
                for index, body in enumerate(self.messages):
                    ahead = started + index / self.rate - time.monotonic()
                    if ahead > 0:
                        time.sleep(ahead)
                    try:
                        key = envelope_key(orjson.loads(body))
                    except orjson.JSONDecodeError:
                        key = None
                    publisher.send(body, key)
                    self.done = index + 1
                publisher.close(timeout=900)
        except BaseException as error:  # reported by join()
            self.error = error

    def join(self, timeout: float) -> None:
        self.thread.join(timeout)
        if self.thread.is_alive():
            raise FaultRunError(f"publishing did not finish within {timeout:.0f} s ({self.done} of {len(self.messages)})")
        if self.error is not None:
            raise FaultRunError(f"publishing failed: {self.error}") from self.error


class FaultRun:
    """One run of the matrix on the stack at ``home``; ``log`` receives progress lines."""

    def __init__(self, home: Path, work: Path, *, outage_s: float, rate: float, hosts: int = 6, days: int = 8,
                 seed: int = 4711, kill_down_s: float | None = None, log: Callable[[str], None] = print):
        """``outage_s``: how long PostgreSQL and RT stay stopped; ``kill_down_s`` (default the same):
        how long a killed component stays dead before the recovery step."""
        self.home, self.work, self.outage_s, self.rate = home, work, outage_s, rate
        self.kill_down_s = outage_s if kill_down_s is None else kill_down_s
        self.hosts, self.days, self.seed, self.log = hosts, days, seed, log
        self.run_id = uuid.uuid4().hex[:8]
        self.env = run_env(home, self.run_id)
        self.tickets_group = f"faults-{self.run_id}-tickets"
        self.tickets: subprocess.Popen | None = None
        self.published: list[bytes] = []
        self.bad: list[bytes] = []
        self.expected_ids: set[str] = set()
        self.outcomes: list[FaultOutcome] = []
        self.data: list[bytes] = []
        self.tails: list[bytes] = []
        self.data_end = 0.0

    # --- commands -------------------------------------------------------------------------------
    def cli(self, *args: str, timeout: float = 1500) -> str:
        result = subprocess.run([*CLI, *args], env=self.env, cwd=REPO, capture_output=True, text=True, timeout=timeout)
        if result.returncode != 0:
            raise FaultRunError(f"pathwatch {' '.join(args)} exited {result.returncode}:\n"
                                f"{result.stderr[-3000:]}\n{result.stdout[-1000:]}")
        return result.stdout

    @property
    def config(self):
        from pathwatch.stack import config as stack_config

        return stack_config.resolve(home=self.home, environ=self.env)

    @property
    def settings(self):
        from pathwatch.streaming.settings import from_stack

        return from_stack(self.config)

    def rows(self, sql: str) -> list[tuple]:
        import psycopg

        with psycopg.connect(self.settings.database_url, connect_timeout=5) as connection:
            return connection.execute(sql).fetchall()

    # --- set-up ---------------------------------------------------------------------------------
    def prepare(self) -> None:
        """Stack up with tickets, fresh tables, the mesh simulated, pipeline and tickets service started."""
        from pathwatch.streaming.normalise import DEAD, Origin, normalise

        from pathwatch.stack import manage

        # A fresh RT: the tickets of earlier runs on this home would hold the same anomaly ids.
        manage.down(self.config, wipe=True, names=("rt", "alertmanager"))
        self.log("stack up (tickets enabled)")
        self.cli("stack", "up")
        self.cli("db", "migrate")
        import psycopg

        with psycopg.connect(self.settings.database_url, autocommit=True) as connection:
            connection.execute(f"TRUNCATE {', '.join(TABLES)}")
        sim = self.work / "sim"
        start = (date.today() - timedelta(days=self.days)).isoformat() + "T00:00:00Z"
        self.cli("simulate", "--out", str(sim), "--seed", str(self.seed), "--hosts", str(self.hosts),
                 "--days", str(self.days), "--start", start)
        self.cli("db", "hosts", str(sim / "mesh.json"))
        self.data = [line for line in (sim / "raw.jsonl").read_bytes().splitlines() if line.strip()]
        records = [r for body in self.data for r in normalise(body, Origin("x", 0, 0), 0) if r.target != DEAD]
        from pathwatch.models.observe import epoch

        self.data_end = max(epoch(r.value["time"]) for r in records)
        self._ids = {body: [r.value["id"] for r in normalise(body, Origin("x", 0, 0), 0) if r.target != DEAD]
                     for body in self.data}
        self.log(f"pipeline start ({len(self.data)} messages to stream, run {self.run_id})")
        self.cli("pipeline", "start", "--fresh")
        self.start_tickets()

    def start_tickets(self) -> None:
        log = open(self.home / "logs" / f"faults-tickets-{self.run_id}.log", "ab")
        self.tickets = subprocess.Popen([*CLI, "tickets", "run", "--group", self.tickets_group], env=self.env,
                                        cwd=REPO, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

    def stop_tickets(self, sig: int = signal.SIGTERM) -> None:
        if self.tickets is not None and self.tickets.poll() is None:
            os.killpg(self.tickets.pid, sig)
            try:
                self.tickets.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(self.tickets.pid, signal.SIGKILL)
                self.tickets.wait(30)

    def teardown(self) -> None:
        self.stop_tickets()
        subprocess.run([*CLI, "pipeline", "stop"], env=self.env, cwd=REPO, capture_output=True, timeout=300)
        subprocess.run([*CLI, "stack", "down"], env=self.env, cwd=REPO, capture_output=True, timeout=300)

    # --- faults ---------------------------------------------------------------------------------
    def _kill_component(self, pid_name: str) -> None:
        from pathwatch.stack import procs

        record = procs.running(self.home / "run" / f"{pid_name}.pid")
        if record is None:
            raise FaultRunError(f"{pid_name} is not running: nothing to kill")
        os.killpg(record.pgid, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and (record.alive() or procs.group_members(record.pgid)):
            time.sleep(0.1)

    def _kill_taskmanager(self) -> str:
        """kill -9 of every TaskManager's JVM (they run the jobs' operators and Python). Under the
        stack's supervisor each comes back by itself; one started without it needs `stack up`."""
        from pathwatch.stack import procs
        from pathwatch.stack.flink import taskmanager_pid_files

        running = [(path, record) for path in taskmanager_pid_files(self.home / "run")
                   if (record := procs.running(path)) is not None]
        if not running:
            raise FaultRunError("no flink-taskmanager is running: nothing to kill")
        recovery = "itself (its supervisor)"
        for path, record in running:
            if not any("pathwatch.stack.supervise" in part for part in record.argv):
                self._kill_component(path.stem)
                recovery = "stack up"
                continue
            jvms = [pid for pid in procs.group_members(record.pgid)
                    if b"TaskManagerRunner" in Path(f"/proc/{pid}/cmdline").read_bytes()]
            if not jvms:
                raise FaultRunError("no TaskManager JVM under its supervisor")
            for pid in jvms:
                os.kill(pid, signal.SIGKILL)
        return recovery

    def _stop_component(self, name: str) -> None:
        from pathwatch.stack import manage

        manage.down(self.config, names=(name,))

    def inject(self, fault: str) -> str:
        """Cause ``fault``; returns the recovery it needs (run by :meth:`recover`)."""
        if fault == "kill_kafka":
            self._kill_component("kafka")
            return "stack up"
        if fault == "kill_postgres":
            self._kill_component("timescaledb")
            return "stack up"
        if fault == "kill_jobmanager":
            self._kill_component("flink-jobmanager")
            return "stack up, pipeline start"   # a session cluster without HA forgets its jobs
        if fault == "kill_taskmanager":
            return self._kill_taskmanager()
        if fault == "kill_tickets_service":
            self.stop_tickets(signal.SIGKILL)
            return "tickets run"
        if fault == "stop_postgres":
            self._stop_component("timescaledb")
            return "stack up"
        if fault == "stop_rt":
            self._stop_component("rt")
            return "stack up"
        raise ValueError(f"unknown fault {fault!r}; the matrix has {', '.join(FAULTS)}")

    def recover(self, recovery: str) -> None:
        for step in recovery.split(", "):
            if step == "stack up":
                self.cli("stack", "up")
            elif step == "pipeline start":
                self.cli("pipeline", "start")
            elif step == "tickets run":
                self.start_tickets()
            # "itself (...)": nothing to do, the catch-up shows whether it came back

    def observe(self) -> list[str]:
        """One look at what a user sees: components not running, jobs not RUNNING, the service's state."""
        from pathwatch.stack import manage
        from pathwatch.stack.component import GOOD_STATES
        from pathwatch.streaming.pipeline import status

        seen = []
        try:
            for name, part in manage.status(self.config).components.items():
                if part.state not in GOOD_STATES:
                    seen.append(f"stack status: {name} {part.state}" + (f" ({part.error[:120]})" if part.error else ""))
                restarts = part.info.get("taskmanager_restarts")
                if restarts:
                    seen.append(f"stack status: {name} taskmanager restarted {restarts['restarts']} time(s), "
                                f"last exit status {restarts['last_exit_code']}")
        except Exception as error:
            seen.append(f"stack status failed: {type(error).__name__}: {str(error)[:160]}")
        try:
            for job in status(self.settings):
                if job.state != "RUNNING":
                    seen.append(f"pipeline status: {job.name} {job.state or 'not in the cluster'}"
                                + (f" ({job.info['error'][:120]})" if job.info.get("error") else ""))
        except Exception as error:
            seen.append(f"pipeline status failed: {type(error).__name__}: {str(error)[:160]}")
        if self.tickets is None or self.tickets.poll() is not None:
            seen.append("tickets service: not running")
        return seen

    # --- the matrix -----------------------------------------------------------------------------
    def slices(self, count: int) -> list[list[bytes]]:
        size = -(-len(self.data) // count)
        return [self.data[i:i + size] for i in range(0, len(self.data), size)]

    def run_fault(self, fault: str, messages: list[bytes], slice_no: int, catch_up_timeout: float) -> FaultOutcome:
        bad = bad_inputs(slice_no)
        batch = messages[:len(messages) // 2] + bad + messages[len(messages) // 2:]
        publisher = Paced(self.settings, batch, self.rate).start()
        while publisher.done < len(batch) // 3 and publisher.thread.is_alive():
            time.sleep(0.2)
        self.log(f"{fault}: injecting after {publisher.done} of {len(batch)} messages of this slice")
        before = set(self.observe())  # what the status already said: only what the fault changed counts
        fault_at, done_at_fault = time.monotonic(), publisher.done
        recovery = self.inject(fault)
        seen: list[str] = []
        until = fault_at + (self.outage_s if fault.startswith("stop_") else self.kill_down_s)
        while True:  # what a user sees while it is down (at least one look)
            for line in self.observe():
                if line not in seen and line not in before:
                    seen.append(line)
            if time.monotonic() >= until:
                break
            time.sleep(min(5.0, max(0.0, until - time.monotonic())))
        self.log(f"{fault}: recovering ({recovery})")
        self.recover(recovery)
        recovered_at, done_at_recovery = time.monotonic(), publisher.done
        publisher.join(timeout=len(batch) / self.rate + 1200)
        self.published += batch
        self.bad += bad
        for body in batch:
            self.expected_ids.update(self._ids.get(body, ()))
        outcome = FaultOutcome(fault, recovery, down_s=round(recovered_at - fault_at, 1), seen=seen,
                               published_while_down=done_at_recovery - done_at_fault)
        self._catch_up(outcome, catch_up_timeout)
        outcome.caught_up_s = round(time.monotonic() - recovered_at, 1)
        self.log(f"{fault}: caught up {outcome.caught_up_s} s after recovery; "
                 f"{outcome.records_stored}/{outcome.records_expected} records, "
                 f"{outcome.dead_letters}/{outcome.dead_letters_expected} dead letters")
        self.outcomes.append(outcome)
        return outcome

    def _stored_ids(self) -> set[str]:
        stored: set[str] = set()
        for table in ("throughput", "latency", "trace"):
            stored |= {str(row[0]) for row in self.rows(f"SELECT id FROM {table}")}
        return stored

    def _catch_up(self, outcome: FaultOutcome, timeout: float) -> None:
        """Wait until every published record is stored (or ``timeout``); fill in the reconciliation."""
        from pathwatch.streaming.pipeline import PipelineError, wait_caught_up

        deadline = time.monotonic() + timeout
        while True:
            try:
                wait_caught_up(self.settings, max(30.0, deadline - time.monotonic()), settle=2)
            except PipelineError as error:
                if time.monotonic() >= deadline:
                    raise FaultRunError(f"{outcome.fault}: {error}") from None
            try:
                stored = self._stored_ids()
                letters = self.rows("SELECT count(*) FROM dead_letters WHERE stage = 'normalise'")[0][0]
            except Exception as error:  # the database still starting
                stored, letters = set(), 0
                self.log(f"{outcome.fault}: database not answering yet: {type(error).__name__}")
            outcome.published = len(self.published)
            outcome.records_expected = len(self.expected_ids)
            outcome.records_stored = len(stored)
            outcome.missing = len(self.expected_ids - stored)
            outcome.unexpected = len(stored - self.expected_ids)
            outcome.dead_letters_expected, outcome.dead_letters = len(self.bad), letters
            if outcome.reconciled or time.monotonic() >= deadline:
                return
            time.sleep(2)

    def run(self, faults: tuple[str, ...] = FAULTS, catch_up_timeout: float = 900) -> list[FaultOutcome]:
        slices = self.slices(len(faults) + 1)
        for number, fault in enumerate(faults):
            self.run_fault(fault, slices[number], number, catch_up_timeout)
        self.finish(slices[len(faults):], catch_up_timeout)
        return self.outcomes

    def finish(self, rest: list[list[bytes]], timeout: float) -> None:
        """The rest of the mesh, then one record per path ahead of it by more than the ordering delay."""
        from pathwatch.streaming.pipeline import wait_caught_up

        remaining = [body for part in rest for body in part]
        self.tails = watermark_tails(self.data, self.data_end + self.settings.ordering_delay_s + 1)
        publisher = Paced(self.settings, remaining + self.tails, self.rate * 4).start()
        publisher.join(timeout=len(remaining) / self.rate + 600)
        self.published += remaining + self.tails
        from pathwatch.streaming.normalise import DEAD, Origin, normalise

        for body in remaining:
            self.expected_ids.update(self._ids[body])
        for body in self.tails:
            self.expected_ids.update(r.value["id"] for r in normalise(body, Origin("x", 0, 0), 0) if r.target != DEAD)
        wait_caught_up(self.settings, timeout, settle=3)
        outcome = FaultOutcome("none (the rest of the mesh)", "")
        self._catch_up(outcome, timeout)
        self.final = outcome
        self.log(f"all published: {outcome.records_stored}/{outcome.records_expected} records stored")

    # --- checks after the run -------------------------------------------------------------------
    def records_topic_counts(self) -> Counter:
        """How often each record id is on the records topic (committed transactions only)."""
        return Counter(orjson.loads(value)["id"] for value in
                       read_topic(self.settings.bootstrap, self.settings.topics["records"], f"check-{self.run_id}"))

    def anomalies_offline(self) -> set[tuple[str, str, str]]:
        """(id, kind, incident_id) of `pathwatch detect` over everything published, up to the data's end."""
        raw = self.work / "published.jsonl"
        raw.write_bytes(b"\n".join(body for body in self.published if body not in set(self.bad)) + b"\n")
        until = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(int(self.data_end) + 1))
        out = self.work / "anomalies.jsonl"
        self.cli("detect", str(raw), "--out", str(out), "--until", until)
        return {(row["id"], row["kind"], row["incident_id"]) for row in map(json.loads, out.read_text().splitlines())}

    def anomalies_streamed(self) -> set[tuple[str, str, str]]:
        return {(str(row[0]), row[1], str(row[2])) for row in self.rows("SELECT id, kind, incident_id FROM anomalies")}

    def tickets_caught_up(self, timeout: float = 600) -> None:
        """Wait until the tickets service has committed every anomaly message."""
        from pathwatch.streaming.pipeline import consumer_lag

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if consumer_lag(self.settings.bootstrap, self.tickets_group, self.settings.topics["anomalies"]) == 0:
                return
            time.sleep(2)
        raise FaultRunError(f"the tickets service did not catch up within {timeout:.0f} s")

    def anomaly_messages(self) -> list[dict]:
        """Every anomaly message on the anomalies topic, partition by partition in offset order."""
        return [orjson.loads(value) for value in
                read_topic(self.settings.bootstrap, self.settings.topics["anomalies"], f"check-a-{self.run_id}")]

    def ticket_check(self) -> dict:
        """The tickets in RT against the anomalies: see the module docstring. A member that joined
        its incident's ticket stays in its first ticket as a closed member (a pointer), so an
        anomaly may be held by two tickets, but open in one at most."""
        from pathwatch.stack.rt import RequestTracker
        from pathwatch.tickets.backends.rt import RTBackend
        from pathwatch.tickets.reconcile import Reconciler
        from tests.tickets_memory import MemoryBackend

        config = self.config
        rt = RequestTracker(config)
        backend = RTBackend(rt.url, rt.token(), config.rt_queue)
        replay = MemoryBackend()
        reconciler = Reconciler(replay)
        final: dict[str, dict] = {}
        for anomaly in self.anomaly_messages():
            reconciler.handle(anomaly)
            final[anomaly["id"]] = anomaly
        # This run's tickets: RT keeps those of earlier runs on the same home (a ticket holds
        # anomaly ids, and the same simulated mesh on the same day gives the same ids).
        tickets = [ticket for ticket in (backend.get(item["reference"].split("#")[-1]) for item in backend.all())
                   if set(ticket.state.members) & set(final)]
        replayed = [replay._ticket(number) for number in replay.store]
        held_rt = {i for t in tickets for i in t.state.members}
        held_replay = {i for t in replayed for i in t.state.members}
        return {"tickets": len(tickets), "open": sum(t.is_open for t in tickets),
                "tickets_fault_free": len(replayed), "open_fault_free": sum(t.is_open for t in replayed),
                "anomalies_ticketed": len(held_rt), "anomalies_ticketed_fault_free": len(held_replay),
                "lost": sorted(held_replay - held_rt), "extra": sorted(held_rt - held_replay),
                **problems(tickets, final), "fault_free": problems(replayed, final)}


def problems(tickets, final: dict[str, dict]) -> dict[str, list[str]]:
    """What would be wrong with ``tickets`` given each anomaly's last state ``final``: an anomaly
    open in two tickets, two open tickets for one problem, an anomaly that ended still open in a
    ticket, a ticket open with nothing open in it or resolved while something is."""
    open_in = Counter(i for t in tickets for i, member in t.state.members.items() if member.open)
    still_open = {i for i, anomaly in final.items() if anomaly.get("end") is None}
    open_keys = Counter(t.key for t in tickets if t.is_open)
    return {"open_in_two_tickets": sorted(i for i, n in open_in.items() if n > 1),
            "open_twice": sorted(k for k, n in open_keys.items() if n > 1),
            "ended_but_open_in_a_ticket": sorted(i for i in open_in if i in final and i not in still_open),
            "ticket_state_wrong": sorted(t.reference for t in tickets
                                         if t.is_open != any(m.open for m in t.state.members.values()))}
