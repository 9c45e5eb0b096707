"""The collector's spool (collector/spool.py) and the publisher that sends through it, without Kafka.

The publisher's Kafka side is checked against the real broker by tests/faults/test_collector_kill.py;
here a stand-in producer plays the broker so that the retry path can be driven step by step.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time

import orjson
import pytest

from pathwatch.collector.spool import Spool, SpoolError, count_unacknowledged
from pathwatch.collector.spooled_publisher import SpooledPublisher


def _values(n: int, start: int = 0) -> list[bytes]:
    return [orjson.dumps({"source": "a", "destination": "b", "n": i}) for i in range(start, start + n)]


def test_what_was_never_acknowledged_is_pending_for_the_next_run_in_order(tmp_path):
    with Spool(tmp_path, segment_lines=3) as spool:
        entries = [spool.append(value) for value in _values(8)]
        for entry in entries[::2]:
            spool.acknowledge(entry)
        assert spool.unacknowledged == 4
    with Spool(tmp_path) as spool:
        assert [entry.value for entry in spool.pending()] == _values(8)[1::2]


def test_the_backlog_is_counted_from_the_files_while_a_collector_holds_the_spool(tmp_path):
    with Spool(tmp_path, segment_lines=3) as spool:
        entries = [spool.append(value) for value in _values(7)]
        for entry in entries[1:5]:
            spool.acknowledge(entry)
        assert count_unacknowledged(tmp_path) == spool.unacknowledged == 3


def test_a_segment_is_deleted_once_every_line_of_it_is_acknowledged(tmp_path):
    with Spool(tmp_path, segment_lines=2) as spool:
        entries = [spool.append(value) for value in _values(5)]
        for entry in entries[:4]:
            spool.acknowledge(entry)
        assert sorted(p.name for p in tmp_path.glob("*.jsonl")) == ["00000003.jsonl"]  # the one still written
        spool.acknowledge(entries[4])
    assert list(tmp_path.glob("*.jsonl")) == [] and list(tmp_path.glob("*.acked")) == []


def test_lines_acknowledged_after_a_restart_empty_the_spool(tmp_path):
    with Spool(tmp_path, segment_lines=2) as spool:
        for value in _values(3):
            spool.append(value)
    with Spool(tmp_path) as spool:
        pending = list(spool.pending())
        assert len(pending) == 3
        for entry in pending:
            spool.acknowledge(entry)
        assert spool.unacknowledged == 0
    with Spool(tmp_path) as spool:
        assert list(spool.pending()) == []
    assert list(tmp_path.glob("*.jsonl")) == []


def test_two_collectors_cannot_share_a_spool(tmp_path):
    with Spool(tmp_path):
        with pytest.raises(SpoolError, match=f"spool {tmp_path}: in use by another collector"):
            Spool(tmp_path).open()
    with Spool(tmp_path):  # free again once the first closed
        pass


def test_a_line_cut_short_is_not_sent_and_is_counted(tmp_path):
    with Spool(tmp_path) as spool:
        spool.append(b'{"n": 1}')
    with open(tmp_path / "00000001.jsonl", "ab") as file:
        file.write(b'{"n": 2, "cut sh')
    with Spool(tmp_path) as spool:
        assert [entry.value for entry in spool.pending()] == [b'{"n": 1}'] and spool.torn == 1


def test_a_spooled_value_must_be_one_line(tmp_path):
    with Spool(tmp_path) as spool, pytest.raises(ValueError, match="one line"):
        spool.append(b"{}\n{}")


def test_a_process_killed_with_sigkill_leaves_every_unacknowledged_line(tmp_path):
    script = textwrap.dedent(f"""
        import os, signal
        from pathwatch.collector.spool import Spool
        spool = Spool({str(tmp_path)!r}, segment_lines=7, fsync=False)
        spool.open()
        for i in range(50):
            entry = spool.append(b'{{"n": %d}}' % i)
            if i % 3 == 0:
                spool.acknowledge(entry)
        os.kill(os.getpid(), signal.SIGKILL)
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=60)
    assert result.returncode == -signal.SIGKILL, result.stderr
    with Spool(tmp_path) as spool:  # the lock died with the process
        assert [orjson.loads(entry.value)["n"] for entry in spool.pending()] == [i for i in range(50) if i % 3]


class _Broker:
    """Stands in for confluent_kafka.Producer: holds produced messages until ``deliver`` reports them."""

    def __init__(self):
        self.queued: list[tuple[bytes, object]] = []
        self.produced: list[bytes] = []

    def produce(self, topic, value, key=None, on_delivery=None):
        self.queued.append((value, on_delivery))
        self.produced.append(value)

    def deliver(self, error=None) -> None:
        queued, self.queued = self.queued, []
        for _value, callback in queued:
            callback(error, None)

    def poll(self, timeout):
        return 0

    def flush(self, timeout):
        self.deliver()
        return 0


class _Raw:
    def __init__(self):
        self.producer, self.topic = _Broker(), "raw"


def test_a_failed_delivery_stays_spooled_and_is_produced_again_after_the_retry_delay(tmp_path):
    now = [0.0]
    raw = _Raw()
    publisher = SpooledPublisher(raw, Spool(tmp_path), retry_s=10.0, poll_s=0.01, clock=lambda: now[0])
    publisher.spool.open()
    publisher.send_envelope({"source": "a", "destination": "b", "n": 1})
    raw.producer.deliver(error="Local: Message timed out")
    assert publisher.failed == 1 and publisher.spool.unacknowledged == 1
    with publisher._retry_lock:  # not due yet
        assert [at for at, _ in publisher._retry] == [10.0]
    now[0] = 11.0
    publisher._thread.start()
    deadline = time.monotonic() + 5
    while len(raw.producer.produced) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(raw.producer.produced) == 2, "the failed envelope was not produced again"
    assert publisher.close() == 0 and publisher.delivered == 1
    with Spool(tmp_path) as spool:
        assert list(spool.pending()) == []


def test_a_restarted_publisher_sends_what_the_last_run_left(tmp_path):
    with Spool(tmp_path) as spool:
        spool.append(orjson.dumps({"source": "a", "destination": "b", "n": 1}))
    raw = _Raw()
    publisher = SpooledPublisher(raw, Spool(tmp_path))
    publisher.spool.open()
    assert publisher.start() == 1
    assert publisher.close() == 0 and raw.producer.produced == [orjson.dumps({"source": "a", "destination": "b", "n": 1})]
