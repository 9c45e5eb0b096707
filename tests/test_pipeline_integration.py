"""The streaming pipeline against the real stack: reconciliation, parity with `pathwatch detect`,
kill -9 and restore, and bad input — checked on the one stream of tests/stack/streamed.py.
"""

from __future__ import annotations

import json
import time

import orjson
import pytest

from tests.stack.streamed import _rows, cli

pytestmark = pytest.mark.stack


# --- the checks ----------------------------------------------------------------------------------

def test_jobs_were_killed_mid_stream_and_restored_from_a_checkpoint(stream):
    assert stream["killed"], "the TaskManager was not killed"
    for name, job in stream["jobs"].items():  # the same Flink jobs, restarted by the cluster
        assert job["running"], f"{name} is not running: {job}"
        restored = job["info"].get("restored_from")
        assert restored is not None and "/chk-" in restored, f"{name} was not restored from a checkpoint: {job}"


def test_jobs_were_rescaled_through_savepoints_1_to_2_and_back(stream):
    # What follows the rescales (counts reconcile, each record once, anomalies = `pathwatch
    # detect`) is checked by the tests below over the whole stream.
    assert [rescale["parallelism"] for rescale in stream["rescales"]] == [2, 1]
    for rescale in stream["rescales"]:
        for name, job in rescale["jobs"].items():
            assert job["running"], f"{name} did not start again: {job}"
            assert "/savepoint-" in (job["info"].get("restored_from") or ""), f"{name} not resumed from its savepoint: {job}"
            assert job["info"]["parallelism"] == rescale["parallelism"], f"{name} runs at {job['info']['parallelism']}"


def test_counts_reconcile_raw_in_equals_records_plus_dead_letters(stream):
    from pathwatch.streaming.normalise import DEAD, Origin, normalise

    settings = stream["settings"]
    expected_ids = {r.value["id"] for r in stream["records"]}
    for body in stream["late"] + stream["tails"]:
        expected_ids |= {r.value["id"] for r in normalise(body, Origin("x", 0, 0), 0) if r.target != DEAD}
    stored = set()
    for table in ("throughput", "latency", "trace"):
        stored |= {str(row[0]) for row in _rows(settings, f"SELECT id FROM {table}")}
    assert stored == expected_ids  # nothing lost, nothing extra, no duplicate rows (ids are keys)
    letters = _rows(settings, "SELECT stage, reason, field, input, input_encoding FROM dead_letters WHERE stage = 'normalise'")
    bad = [body for bodies in stream["bad"].values() for body in bodies]
    assert len(letters) == len(bad)
    published = len(stream["data"]) + len(stream["duplicates"]) + len(bad) + len(stream["late"]) + len(stream["tails"])
    with_records = published - len(bad)
    assert published == with_records + len(letters)
    # Every bad input is there byte for byte, with the reason and field the parsers give.
    import base64

    by_input = {(base64.b64decode(row[3]) if row[4] == "base64" else row[3].encode()): row for row in letters}
    for kind, bodies in stream["bad"].items():
        for body in bodies:
            assert body in by_input, f"{kind}: {body[:80]!r} not dead-lettered"
            expected = normalise(body, Origin("x", 0, 0), 0)[0].value
            assert (by_input[body][1], by_input[body][2]) == (expected["reason"], expected["field"]), kind


def test_records_topic_holds_each_record_exactly_once_despite_the_kill(stream):
    from confluent_kafka import Consumer

    settings = stream["settings"]
    consumer = Consumer({"bootstrap.servers": settings.bootstrap, "group.id": f"check-{stream['run']}",
                         "auto.offset.reset": "earliest", "isolation.level": "read_committed"})
    consumer.subscribe([settings.topics["records"]])
    ids, idle = [], 0
    while idle < 5:
        message = consumer.poll(1.0)
        if message is None:
            idle += 1
            continue
        if not message.error():
            ids.append(orjson.loads(message.value())["id"])
            idle = 0
    consumer.close()
    # Duplicated raw messages give the same record twice (both are delivered); nothing else repeats,
    # although the normalise job was killed and replayed part of its input.
    from collections import Counter

    from pathwatch.streaming.normalise import Origin, normalise

    duplicate_ids = {r.value["id"] for body in stream["duplicates"] for r in normalise(body, Origin("x", 0, 0), 0)}
    repeated = {record_id: n for record_id, n in Counter(ids).items() if n > 1}
    assert set(repeated) == duplicate_ids and set(repeated.values()) == {2}
    assert len(set(ids)) == len({r.value["id"] for r in stream["records"]}) + len(stream["late"]) + len(stream["tails"])


def test_a_pscheduler_kafka_archiver_message_is_read_as_it_is(stream):
    """The run object pScheduler's Kafka archiver publishes (no envelope, no key) becomes its record."""
    from tests.stack.streamed import ARCHIVER_DEST

    run = orjson.loads(stream["archiver"])
    rows = _rows(stream["settings"], "SELECT source, packets_sent, packets_lost, time FROM latency WHERE destination = %s",
                 (ARCHIVER_DEST,))
    assert [(source, sent, lost) for source, sent, lost, _ in rows] == [(run["test"]["spec"]["source"], 600, 2)]
    assert rows[0][3].strftime("%Y-%m-%dT%H:%M:%SZ") == run["schedule"]["start"]


def test_late_record_is_stored_and_accounted_as_not_analysed(stream):
    """The old record is refused by the detectors with a reason; so are re-sent copies of records
    its path has already moved past (the detectors keep only recent ids), and nothing else."""
    from pathwatch.streaming.normalise import Origin, normalise

    settings = stream["settings"]
    rows = _rows(settings, "SELECT reason, field, input FROM dead_letters WHERE stage = 'detect'")
    refused = {orjson.loads(row[2])["id"] for row in rows}
    late_ids = {r.value["id"] for body in stream["late"] for r in normalise(body, Origin("x", 0, 0), 0)}
    repeats = {r.value["id"] for body in stream["duplicates"] for r in normalise(body, Origin("x", 0, 0), 0)}
    assert late_ids <= refused <= late_ids | repeats
    assert all(row[0].startswith("late") and row[1] == "time" for row in rows)


def test_streaming_anomalies_equal_pathwatch_detect(stream, tmp_path):
    settings = stream["settings"]
    raw = tmp_path / "input.jsonl"
    raw.write_bytes(b"\n".join(stream["data"] + stream["duplicates"]) + b"\n")
    until = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(int(stream["data_end"]) + 1))
    out = tmp_path / "anomalies.jsonl"
    cli(stream["home"], "detect", str(raw), "--out", str(out), "--until", until)
    offline = {(row["id"], row["kind"], row["incident_id"]) for row in map(json.loads, out.read_text().splitlines())}
    streamed = {(str(row[0]), row[1], str(row[2])) for row in _rows(settings, "SELECT id, kind, incident_id FROM anomalies")}
    assert offline, "the simulated mesh should give anomalies"
    assert len({row[2] for row in offline}) < len(offline), "the mesh's host-level faults should group into incidents"
    assert streamed == offline


def test_rollups_count_what_was_stored(stream):
    settings = stream["settings"]
    hourly = _rows(settings, "SELECT sum(latency_runs), sum(throughput_runs), sum(trace_runs) FROM path_hourly")[0]
    daily = _rows(settings, "SELECT sum(latency_runs), sum(throughput_runs), sum(trace_runs) FROM path_daily")[0]
    stored = [_rows(settings, "SELECT count(*) FROM latency WHERE succeeded")[0][0],
              _rows(settings, "SELECT count(*) FROM throughput")[0][0],
              _rows(settings, "SELECT count(*) FROM trace")[0][0]]
    assert tuple(hourly) == tuple(daily) == tuple(stored)
