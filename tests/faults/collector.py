"""kill -9 of a collector mid-run, while Kafka is away: nothing the collector measured is lost.

Shared by ``tests/faults/test_collector_kill.py`` (CI) and ``bench/faults_bench.py``. On the
test stack's Kafka, with a fresh raw topic, a real ``pathwatch collect`` runs ping and
tracepath between loopback addresses (127.0.0.1 → .2, .3) every few seconds:

1. it measures and publishes for ``before_s``;
2. Kafka is stopped; the collector goes on measuring for ``kafka_down_s`` (its envelopes now
   wait in its spool);
3. the collector is killed with SIGKILL while its tools run;
4. Kafka is started again, then the collector, on the same spool: it sends what the killed run
   left, and measures for ``after_s`` more before it is stopped (SIGTERM).

The collector's log says, one line per run, what it measured (it logs a run after its envelope
is in the spool). Afterwards every logged run must be on the raw topic, none twice, and the
spool empty. Without a spool the runs of step 2 die with the process: the producer held them
in memory only.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
import uuid
from pathlib import Path
from typing import Callable

import orjson

from bench.stack_env import CLI, REPO, run_env
from tests.faults.matrix import read_topic

MESH = """\
name: {name}
hosts:
  - {{name: a, address: 127.0.0.1}}
  - {{name: b, address: 127.0.0.2}}
  - {{name: c, address: 127.0.0.3}}
groups:
  all: {{type: mesh, hosts: [a, b, c]}}
tests:
  - {{name: rtt, type: latency, tool: ping, group: all, interval: 2, options: {{count: 3, interval: 0.2}}}}
  - {{name: path, type: trace, tool: tracepath, group: all, interval: 3, options: {{max_hops: 4}}}}
"""
RUN_LINE = re.compile(r"^\d\d:\d\d:\d\d (ok|failed run) ", re.MULTILINE)
RESENT = re.compile(r"spool: (\d+) envelopes? an earlier run left undelivered sent again")


class CollectorKill:
    """One collector-kill run on the test stack at ``home``; :meth:`run` returns its figures."""

    def __init__(self, home: Path, work: Path, log: Callable[[str], None] = print):
        self.home, self.work, self.log = home, work, log
        self.run_id = uuid.uuid4().hex[:8]
        self.env = {**run_env(home, self.run_id, tickets=False, prefix="collector"), "COLUMNS": "300"}
        self.name = f"collector-{self.run_id}"
        work.mkdir(parents=True, exist_ok=True)
        self.mesh = work / "mesh.yaml"
        self.mesh.write_text(MESH.format(name=self.name))
        self.spool = work / "spool"
        from pathwatch.stack import config as stack_config

        self.config = stack_config.resolve(home=home, environ=self.env)
        self.topic = self.env["PATHWATCH_TOPIC_RAW"]
        self.collector: subprocess.Popen | None = None

    def _kafka(self, up: bool) -> None:
        from pathwatch.stack import manage

        if up:
            manage.up(self.config, names=("kafka",))
        else:
            manage.down(self.config, names=("kafka",))

    def _bootstrap(self) -> str:
        from pathwatch.stack import manage

        return manage.status(self.config, ("kafka",)).kafka_bootstrap

    def _start_collector(self, log_path: Path) -> subprocess.Popen:
        self.collector = subprocess.Popen([*CLI, "collect", "--mesh", str(self.mesh), "--host", "a", "--spool", str(self.spool),
                                 "--bootstrap", self._bootstrap()],
                                env=self.env, cwd=REPO, stdout=subprocess.DEVNULL, stderr=log_path.open("wb"),
                                start_new_session=True)  # fmt: skip
        return self.collector

    def _spooled(self) -> int:
        """Lines in the spool not acknowledged (read from its files: a running collector holds its lock)."""
        from pathwatch.collector.spool import count_unacknowledged

        return count_unacknowledged(self.spool)

    def run(self, before_s: float = 8.0, kafka_down_s: float = 20.0, after_s: float = 15.0) -> dict:
        from confluent_kafka.admin import AdminClient, NewTopic

        self._kafka(up=True)
        bootstrap = self._bootstrap()
        if self.topic not in AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=30).topics:
            # `stack up` makes the configured topics; this is for a Kafka that did not
            AdminClient({"bootstrap.servers": bootstrap}).create_topics([NewTopic(self.topic, 1, 1)])[self.topic].result(30)
        first_log, second_log = self.work / "collect-1.log", self.work / "collect-2.log"

        collector = self._start_collector(first_log)
        time.sleep(before_s)
        self.log(f"collector {self.name}: stopping Kafka after {before_s:g} s of measuring")
        self._kafka(up=False)
        time.sleep(kafka_down_s)
        spooled_at_kill = self._spooled()
        os.killpg(collector.pid, signal.SIGKILL)
        collector.wait(30)
        logged_before = len(RUN_LINE.findall(first_log.read_text(errors="replace")))
        self.log(f"collector killed (-9) with Kafka down {kafka_down_s:g} s: {logged_before} runs logged, "
                 f"{spooled_at_kill} envelopes undelivered in its spool")  # fmt: skip

        started = time.monotonic()
        self._kafka(up=True)
        collector = self._start_collector(second_log)
        time.sleep(after_s)
        collector.send_signal(signal.SIGTERM)
        returncode = collector.wait(120)
        second = second_log.read_text(errors="replace")
        logged_after = len(RUN_LINE.findall(second))
        resent = sum(int(n) for n in RESENT.findall(second))

        values = [value for value in read_topic(bootstrap, self.topic, f"check-{self.run_id}")]
        ours = [value for value in values if orjson.loads(value).get("meta", {}).get("mesh") == self.name]
        figures = {
            "fault": "kill_collector", "recovery": "restart the collector (same spool)",
            "kafka_down_s": kafka_down_s, "logged_runs": logged_before + logged_after,
            "logged_before_kill": logged_before, "spooled_at_kill": spooled_at_kill, "resent_on_restart": resent,
            "on_topic": len(ours), "on_topic_distinct": len(set(ours)),
            "left_in_spool": self._spooled(), "second_run_exit": returncode,
            "restart_to_stopped_s": round(time.monotonic() - started, 1),
            "collector_log_after_restart": second.splitlines()[:6],
        }
        figures["lost"] = max(0, figures["logged_runs"] - figures["on_topic_distinct"])
        figures["duplicated"] = figures["on_topic"] - figures["on_topic_distinct"]
        self.log(f"collector: {figures['logged_runs']} runs logged, {figures['on_topic_distinct']} distinct envelopes "
                 f"on the topic ({figures['duplicated']} twice), {resent} sent again after the restart")  # fmt: skip
        return figures

    def teardown(self) -> None:
        if self.collector is not None and self.collector.poll() is None:
            os.killpg(self.collector.pid, signal.SIGKILL)
            self.collector.wait(30)
