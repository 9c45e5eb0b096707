"""``pathwatch evaluate`` end to end: JSON report beside the WLCG baseline, bad input, plots."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from pathwatch.contract.timefmt import from_epoch
from pathwatch.evaluation.command import run_evaluate
from pathwatch.evaluation.matching import make_anomaly

PATHWATCH = str(Path(sys.executable).with_name("pathwatch"))
H, D = 3600.0, 86400.0
T0 = 1714521600.0  # 2024-05-01T00:00:00Z
STEP = T0 + 1.5 * D  # a→b loses 5 % of its packets from 2024-05-02T12:00Z on


def latency_envelope(src: str, dst: str, t: float, lost: int) -> dict:
    """A pscheduler latencybg result as its archiver receives it."""
    return {"format": "pscheduler", "collected_at": from_epoch(t + 60), "payload": {
        "id": f"{src}-{dst}-{t:.0f}", "schedule": {"start": from_epoch(t), "duration": "PT60S"},
        "test": {"type": "latencybg", "spec": {"source": src, "dest": dst}},
        "tool": {"name": "powstream", "version": "4.4.6"}, "participants": [src, dst],
        "result": {"succeeded": True, "packets-sent": 600, "packets-received": 600 - lost, "packets-lost": lost,
                   "histogram-latency": {"10.00": 600 - lost}}}}


def write_jsonl(path: Path, rows) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


@pytest.fixture
def case(tmp_path):
    """4 days of hourly one-way latency on a→b and b→a; a loss step on a→b, found by us 10 min in;
    our false alarm on b→a. The baseline's loss rule sees day 2's 2.5 % mean on the next run."""
    raw = write_jsonl(tmp_path / "raw.jsonl", [
        latency_envelope(src, dst, t, 30 if src == "a" and t >= STEP else 0)
        for t in (T0 + h * H for h in range(96)) for src, dst in (("a", "b"), ("b", "a"))])
    labels = write_jsonl(tmp_path / "labels.jsonl", [
        {"kind": "loss_step", "source": "a", "destination": "b", "start": from_epoch(STEP), "end": None,
         "note": "extra keys are ignored"}])
    anomalies = write_jsonl(tmp_path / "anomalies.jsonl", [
        make_anomaly("loss_step", "a", "b", STEP, detected_at=STEP + 600).to_dict(),
        make_anomaly("latency_shift", "b", "a", T0 + 2 * D, end=T0 + 2.2 * D).to_dict()])
    return tmp_path, labels, anomalies, raw


def picked(row: dict, expected: dict) -> bool:
    """``row`` has every key of ``expected`` with the same value."""
    return {key: row[key] for key in expected} == expected


def run(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1"}
    return subprocess.run([PATHWATCH, "evaluate", *args], capture_output=True, env=env, timeout=60)


def test_json_report_scores_ours_beside_the_baseline(case):
    _, labels, anomalies, raw = case
    done = run("--labels", str(labels), "--anomalies", str(anomalies), "--raw", str(raw), "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["data"] == {"start": "2024-05-01T00:00:00Z", "end": "2024-05-04T23:00:00Z",
                              "days": pytest.approx(95 / 24, abs=1e-3), "paths": 2, "paths_from": "raw",
                              "path_days": pytest.approx(2 * 95 / 24, abs=1e-3)}
    ours, wlcg = report["pathwatch"], report["wlcg"]
    assert picked(ours["loss_step"], {"labels": 1, "detected": 1, "precision": 1.0, "recall": 1.0, "f1": 1.0,
                                      "delay_median_s": 600.0, "delay_max": "10 min"})
    assert ours["latency_shift"]["false_alarms"] == 1
    assert ours["all"]["precision"] == 0.5
    assert ours["all"]["false_alarms_per_100_path_days"] == pytest.approx(100 / (2 * 95 / 24), abs=1e-3)
    # the daily run at 2024-05-03T00:00Z is the first to see the step: 12 h after it
    assert picked(wlcg["loss_step"], {"detected": 1, "precision": 1.0, "recall": 1.0, "delay_median_s": 43200.0,
                                      "delay_median": "12.0 h"})
    assert wlcg["no_data"]["recall"] is None and report["baseline_alarms"] == 1 and report["note"] is None


def test_without_raw_only_ours_is_scored_and_the_table_says_so(case, capsys):
    _, labels, anomalies, _ = case
    assert evaluate_errors(labels, anomalies) == (0, "")
    report = json.loads(capsys.readouterr().out)
    assert report["wlcg"] is None and "--raw" in report["note"]
    assert report["data"]["paths_from"] == "labels and anomalies"
    table = io.StringIO()
    code = run_evaluate(labels, anomalies, raw=[], as_json=False, plots=None, console=Console(file=io.StringIO()),
                        out=Console(file=table, width=200))
    assert code == 0 and "baseline not scored" in table.getvalue() and "loss_step" in table.getvalue()


def test_bad_label_line_exits_2_naming_file_line_and_field(case):
    tmp, _, anomalies, _ = case
    labels = tmp / "bad-labels.jsonl"
    labels.write_text('{"kind": "loss_step", "source": "a", "destination": "b", "start": "2024-05-02T12:00:00Z"}\n\n'
                      '{"kind": "loss_step", "source": "a", "destination": "b", "start": "yesterday"}\n')
    done = run("--labels", str(labels), "--anomalies", str(anomalies))
    assert done.returncode == 2 and done.stdout == b""
    assert done.stderr.decode().startswith(f"{labels}, line 3, field start: not an RFC 3339 time")


def evaluate_errors(labels: Path, anomalies: Path, **kw) -> tuple[int, str]:
    err = io.StringIO()
    code = run_evaluate(labels, anomalies, raw=kw.pop("raw", []), as_json=True, plots=kw.pop("plots", None),
                        console=Console(file=err, width=300))
    return code, err.getvalue().strip()


@pytest.mark.parametrize("line, message", [
    ({"id": "x", "kind": "loss_step", "source": "a", "destination": "b", "start": "2024-05-01T00:00:00Z",
      "end": None, "severity": "warning", "score": 1, "summary": "s"}, "line 1, field detected_at: missing"),
    ({"id": "x", "kind": "lossy", "source": "a", "destination": "b"}, "line 1, field kind: unknown kind 'lossy'"),
    ({"id": "x", "kind": "loss_step", "source": "a", "destination": "b", "start": "2024-05-02T00:00:00Z",
      "detected_at": "2024-05-02T00:00:00Z", "end": "2024-05-01T00:00:00Z", "severity": "warning", "score": 1,
      "summary": "s"}, "line 1, field end: before start"),
    ({"id": "x", "kind": "loss_step", "source": "a", "destination": "b", "start": "2024-05-01T00:00:00",
      "detected_at": "2024-05-02T00:00:00Z"}, "line 1, field start: not an RFC 3339 time with zone"),
    ([1, 2], "line 1: expected a JSON object"),
])
def test_bad_anomaly_rows_name_the_field(case, line, message):
    tmp, labels, _, _ = case
    anomalies = write_jsonl(tmp / "bad.jsonl", [line])
    code, text = evaluate_errors(labels, anomalies)
    assert code == 2 and text.startswith(f"{anomalies}, {message}"), text


def test_unreadable_and_non_json_files(case):
    tmp, labels, anomalies, _ = case
    code, text = evaluate_errors(tmp / "missing.jsonl", anomalies)
    assert code == 2 and text == f"{tmp / 'missing.jsonl'}: cannot read: No such file or directory"
    broken = tmp / "broken.jsonl"
    broken.write_text('{"kind": \n')
    code, text = evaluate_errors(labels, broken)
    assert code == 2 and text.startswith(f"{broken}, line 1: not JSON")


def test_plots_need_raw(case):
    tmp, labels, anomalies, _ = case
    code, text = evaluate_errors(labels, anomalies, plots=tmp / "plots")
    assert code == 2 and "--plots needs --raw" in text


def test_plots_one_png_per_case_and_an_index(case, capsys):
    tmp, labels, anomalies, raw = case
    code, text = evaluate_errors(labels, anomalies, raw=[raw], plots=tmp / "plots")
    assert code == 0, text
    pngs = sorted(p.name for p in (tmp / "plots").glob("*.png"))
    assert pngs == ["001-loss_step-a-b.png", "false-pathwatch-002-latency_shift-b-a.png"]
    for name in pngs:
        data = (tmp / "plots" / name).read_bytes()
        assert data.startswith(b"\x89PNG") and len(data) > 10_000
    index = (tmp / "plots" / "index.md").read_text()
    assert "| loss_step | a → b |" in index and "detected after 10 min | detected after 12.0 h" in index
    assert "false-pathwatch-002-latency_shift-b-a.png" in index
    assert json.loads(capsys.readouterr().out)["plots"] == str(tmp / "plots" / "index.md")
