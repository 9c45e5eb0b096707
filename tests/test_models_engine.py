"""The offline engine and the detect command: order independence, the anomaly contract, clear errors."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

from jsonschema import Draft202012Validator

from pathwatch.contract import schemas
from pathwatch.contract.timefmt import from_epoch
from pathwatch.models.anomaly import Anomaly
from pathwatch.models.engine import replay
from tests.detector_series import DAY, T0, latency_times

PATHWATCH = str(Path(sys.executable).with_name("pathwatch"))
EXAMPLES = sorted(str(p) for p in (Path(__file__).parents[1] / "ingest" / "example_envelopes").glob("*.jsonl"))


def _latency_record(source: str, t: float, dmin: float, lost: int) -> dict:
    return {"kind": "latency", "id": f"{source}-{t}", "source": source, "destination": "z", "time": from_epoch(t),
            "one_way": True, "packets_sent": 6000, "packets_lost": lost, "delay_min_ms": dmin,
            "delay_median_ms": dmin + 0.3, "max_clock_error_ms": 1.0, "clock_synchronized": True}


def _mesh_records() -> list[dict]:
    rng = random.Random(3)
    records = []
    for t in latency_times(5):
        records.append(_latency_record("a", t, 20 + rng.gauss(0, 0.1) + (7 if t > T0 + 3 * DAY else 0), 0))
        records.append(_latency_record("b", t, 9 + rng.gauss(0, 0.1), 12 if t > T0 + 2 * DAY else 0))
        if t < T0 + 4 * DAY:
            records.append(_latency_record("c", t, 5 + rng.gauss(0, 0.1), 0))
    return records


def test_replay_is_independent_of_input_order_and_reconciles_counts():
    records = _mesh_records()
    ordered = replay(records)
    shuffled = records[:]
    random.Random(1).shuffle(shuffled)
    again = replay(shuffled)
    assert ordered.anomalies == again.anomalies
    assert replay(shuffled, until=T0 + 5 * DAY).anomalies == replay(records, until=T0 + 5 * DAY).anomalies
    assert {(a.source, a.kind) for a in ordered.anomalies} == {("a", "latency_shift"), ("b", "loss_step"), ("c", "no_data")}
    assert ordered.records == len(records) == ordered.observed + sum(ordered.skipped.values())


def test_every_anomaly_satisfies_the_committed_schema_and_round_trips():
    validator = Draft202012Validator(schemas.load("anomaly.v2.schema.json"))
    anomalies = replay(_mesh_records()).anomalies
    assert anomalies
    for anomaly in anomalies:
        data = json.loads(json.dumps(anomaly.to_dict()))
        assert list(validator.iter_errors(data)) == []
        assert Anomaly.from_dict(data) == anomaly


def test_records_without_a_path_are_counted_not_dropped():
    records = _mesh_records()[:50] + [{**_mesh_records()[0], "source": None}]
    result = replay(records)
    assert result.skipped == {"no source or destination": 1} and result.records == 51


def test_detect_command_writes_anomalies_and_summarises(tmp_path):
    out = tmp_path / "anomalies.jsonl"
    done = subprocess.run([PATHWATCH, "detect", *EXAMPLES, "--out", str(out)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert out.exists() and "0 incidents (0 anomalies) on" in done.stderr


def test_detect_command_rejects_bad_config_naming_the_parameter(tmp_path):
    config = tmp_path / "detectors.yaml"
    config.write_text("levels: {tput_runs: 3, no_such_knob: 1}\n")
    done = subprocess.run([PATHWATCH, "detect", *EXAMPLES, "--out", str(tmp_path / "a.jsonl"), "--config", str(config)],
                          capture_output=True, text=True)
    assert done.returncode == 2
    assert "--config" in done.stderr and "levels" in done.stderr and "no_such_knob" in done.stderr


def test_detect_command_writes_the_vetoed_candidates_when_asked(tmp_path):
    """A small simulated mesh (its benign catalogue: busy-hour queues, NTP corrections, ...): the
    candidates held back are written, each naming its path, veto and verdict, times in RFC 3339."""
    from pathwatch.models.detectors.latency import VETOES

    sim = tmp_path / "sim"
    made = subprocess.run([PATHWATCH, "simulate", "--out", str(sim), "--seed", "3", "--hosts", "3", "--days", "4"],
                          capture_output=True, text=True)
    assert made.returncode == 0, made.stderr
    out, vetoed = tmp_path / "anomalies.jsonl", tmp_path / "vetoed.jsonl"
    done = subprocess.run([PATHWATCH, "detect", str(sim / "raw.jsonl"), "--out", str(out), "--vetoed", str(vetoed)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in vetoed.read_text().splitlines()]
    assert rows and {r["veto"] for r in rows} <= set(VETOES) and {r["verdict"] for r in rows} <= {"hold", "dismiss"}
    assert all(r["source"] and r["destination"] and r["at"].endswith("Z") and r["start"] <= r["at"] for r in rows)
