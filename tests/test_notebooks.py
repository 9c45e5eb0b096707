"""The notebooks without a stack: committed clean and valid, and the pure parts of pathwatch.notebooks.

The notebooks themselves run top to bottom against the test stack in test_notebooks_stack.py.
Here: every notebook is valid nbformat, has no outputs or execution counts, one parameters
cell and one summary cell, and no SQL of its own; the helpers' pure
functions (their docstring examples run in test_doctests.py); parameters injected into a real kernel that is this venv's python; a backtest sweep
whose parameter really reaches the detectors; and `pathwatch notebook` serving JupyterLab on
127.0.0.1 behind its token with the venv's kernel.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import nbformat
import pandas as pd
import pytest
import requests

from pathwatch import notebooks as helpers
from pathwatch.notebooks import backtest
from pathwatch.notebooks.runner import NOTEBOOK_DIR, execute, has_outputs, inject_parameters, strip, tagged_output

NOTEBOOKS = ("01_explore_path.ipynb", "02_backtest_detectors.ipynb", "03_train_model.ipynb",
             "04_investigate_anomaly.ipynb")


def _read(name: str):
    return nbformat.read(NOTEBOOK_DIR / name, as_version=4)


def test_the_four_notebooks_are_there_and_nothing_else():
    assert sorted(p.name for p in NOTEBOOK_DIR.glob("*.ipynb")) == sorted(NOTEBOOKS)


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_is_valid_stripped_and_parameterised(name):
    nb = _read(name)
    nbformat.validate(nb)
    assert has_outputs(nb) == [], f"{name}: commit it stripped (python -m pathwatch.notebooks.runner strip {name})"
    assert nb.metadata["kernelspec"]["name"] == "python3"
    tags = [tag for cell in nb.cells for tag in cell.get("metadata", {}).get("tags", [])]
    assert tags.count("parameters") == 1 and tags.count("summary") == 1
    assert "injected-parameters" not in tags
    code = "\n".join(cell.source for cell in nb.cells if cell.cell_type == "code")
    # Queries live in pathwatch.notebooks, once; notebooks only call it.
    for word in ("SELECT ", "FROM ", "psycopg.connect"):
        assert word not in code, f"{name} has its own SQL/connection ({word.strip()}); put it in notebooks/data.py"
    assert "postgresql://" not in code, f"{name} hard-codes a DSN"


def test_strip_removes_outputs_and_counts():
    nb = _read("01_explore_path.ipynb")
    nb.cells[1].outputs = [nbformat.v4.new_output("stream", name="stdout", text="x")]
    nb.cells[1].execution_count = 3
    assert has_outputs(nb) == [1]
    assert has_outputs(strip(nb)) == []


def test_dsn_comes_from_the_argument_then_the_environment():
    env = {helpers.DSN_ENV: "postgresql://ro@envhost/db"}
    assert helpers.resolve_dsn("postgresql://ro@arghost/db", environ=env) == "postgresql://ro@arghost/db"
    assert helpers.resolve_dsn(None, environ=env) == "postgresql://ro@envhost/db"


def test_dsn_falls_back_to_the_stack_of_pathwatch_home(tmp_path, monkeypatch):
    from pathwatch import stack

    monkeypatch.delenv(helpers.DSN_ENV, raising=False)
    monkeypatch.setenv("PATHWATCH_HOME", str(tmp_path))
    monkeypatch.setenv("PATHWATCH_POSTGRES_PORT", "25999")
    expected = stack.status().database_url_readonly
    assert helpers.resolve_dsn(None) == expected
    assert "pathwatch_ro" in expected and ":25999/" in expected


def test_route_summary_counts_routes_and_their_comebacks():
    t0 = datetime(2024, 1, 1, tzinfo=timezone.utc)
    ids = ["a", "a", "b", "a", "b", "b", "c"]
    traces = pd.DataFrame({"time": [t0 + timedelta(minutes=10 * i) for i in range(len(ids))], "path_id": ids,
                           "as_path_id": ["x"] * len(ids), "hop_count": [5, 5, 6, 5, 6, 6, 7],
                           "reached": [True, True, True, True, True, True, False]})
    summary = helpers.route_summary(traces)
    assert summary["path_id"].tolist() == ["a", "b", "c"]
    assert summary["traces"].tolist() == [3, 3, 1]
    assert summary["stretches"].tolist() == [2, 2, 1]
    assert summary["reached"].tolist() == [True, True, False]
    assert summary["share"].sum() == pytest.approx(1.0)
    assert helpers.route_stretches(traces)["path_id"].tolist() == ["a", "b", "a", "b", "c"]


def test_hop_table_lines_routes_up_by_ttl():
    rows = pd.DataFrame({"path_id": ["r1"] * 3 + ["r2"] * 4, "ttl": [1, 2, 3, 1, 2, 3, 4],
                         "ip": ["10.0.0.1", "10.1.0.1", "10.2.0.1", "10.0.0.1", None, "10.3.0.1", "10.2.0.1"]})
    table = helpers.hop_table(rows, order=["r1", "r2"])
    assert table.index.tolist() == [1, 2, 3, 4]
    assert table["r1"].tolist() == ["10.0.0.1", "10.1.0.1", "10.2.0.1", ""]
    assert table["r2"].tolist() == ["10.0.0.1", "*", "10.3.0.1", "10.2.0.1"]


def test_suspect_hops_are_those_every_troubled_neighbour_shares():
    neighbours = pd.DataFrame({"source": ["a", "b", "c"], "destination": ["x", "y", "z"],
                               "shared_ips": ["10.0.0.1, 10.0.0.7", "10.0.0.7", "10.0.0.1"],
                               "anomalies_in_window": [2, 1, 0]})
    assert helpers.suspect_hops(neighbours) == ["10.0.0.7"]
    assert helpers.suspect_hops(neighbours.assign(anomalies_in_window=0)) == []
    assert helpers.suspect_hops(neighbours.iloc[0:0]) == []


def _anomaly(kind, source, destination, start, severity="warning"):
    from pathwatch.models.anomaly import Anomaly

    return Anomaly.open(kind, source, destination, start=start, detected_at=start + 60, severity=severity, score=0.5,
                        summary=f"{kind} on {source} → {destination}", evidence={})


def test_incident_table_groups_anomalies_by_incident_with_the_root_first():
    from pathwatch.notebooks.incidents import incident_table

    dark = _anomaly("no_data", "a", "c", 7200.0)
    # Members of the host incident on other paths, one starting before the root, one more severe.
    early = _anomaly("unreachable", "c", "a", 3600.0).in_incident(dark.id)
    worse = _anomaly("route_change", "b", "c", 9000.0, severity="major").in_incident(dark.id)
    alone = _anomaly("loss_step", "d", "e", 100.0)
    states = [dark, early, worse.closed(20000.0), alone, alone.closed(5000.0), worse]  # worse re-opened last
    table = incident_table(states)
    assert table["incident_id"].tolist() == [alone.id, dark.id]  # by first member's start
    host = table.iloc[1]
    assert (host["root_id"], host["root_kind"]) == (dark.id, "no_data")  # its id, not the earliest member
    assert host["member_count"] == 3 and host["path_count"] == 3 and host["paths"] == "a>c, b>c, c>a"
    assert host["member_kinds"] == "no_data, route_change, unreachable"
    assert host["severity"] == "major" and host["is_open"] and pd.isna(host["end_time"])
    assert host["start"] == pd.Timestamp(3600.0, unit="s", tz="UTC")
    single = table.iloc[0]
    assert single["member_count"] == 1 and not single["is_open"]
    assert single["end_time"] == pd.Timestamp(5000.0, unit="s", tz="UTC")


def test_incident_table_of_database_rows_lets_the_earliest_member_stand_in_for_a_missing_root():
    import uuid

    from pathwatch.notebooks.incidents import incident_table

    t0 = pd.Timestamp("2026-01-01", tz="UTC")
    root, first, second, v1 = (uuid.uuid4() for _ in range(4))
    rows = pd.DataFrame({
        "id": [second, first, v1], "incident_id": [root, root, None],
        "kind": ["latency_shift", "throughput_drop", "clock_error"], "source": ["a", "a", "x"],
        "destination": ["b", "b", "y"], "start": [t0 + pd.Timedelta(hours=2), t0 + pd.Timedelta(hours=1), t0],
        "end_time": [t0 + pd.Timedelta(hours=3), t0 + pd.Timedelta(hours=5), pd.NaT],
        "severity": ["warning", "info", "warning"]})
    table = incident_table(rows).set_index("incident_id")
    assert set(table.index) == {str(root), str(v1)}  # a row without incident_id is its own incident
    assert table.loc[str(root), "root_id"] == str(first) and table.loc[str(root), "root_kind"] == "throughput_drop"
    assert table.loc[str(root), "end_time"] == t0 + pd.Timedelta(hours=5) and not table.loc[str(root), "is_open"]
    assert table.loc[str(v1), "is_open"] and table.loc[str(v1), "root_id"] == str(v1)
    assert incident_table(rows.iloc[0:0]).empty


def test_pickers_refuse_an_empty_database():
    with pytest.raises(helpers.NotebookError):
        helpers.most_eventful_path(pd.DataFrame(columns=["source", "destination", "anomaly_kinds", "anomalies"]))
    with pytest.raises(helpers.NotebookError):
        helpers.most_interesting_anomaly(pd.DataFrame(columns=["id", "kind", "severity", "start"]))


def test_plot_path_shades_each_anomaly_window_on_every_panel():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t0 = pd.Timestamp("2024-01-01", tz="UTC")
    times = [t0 + pd.Timedelta(hours=h) for h in range(48)]
    series = {
        "throughput": pd.DataFrame({"time": times[::6], "succeeded": [True] * 7 + [False],
                                    "throughput_mbps": [900.0] * 4 + [300.0] * 4}),
        "latency": pd.DataFrame({"time": times, "delay_median_ms": [10.0] * 48, "delay_min_ms": [9.5] * 48,
                                 "loss_pct": [0.0] * 24 + [0.5] * 24}),
        "trace": pd.DataFrame({"time": times[::4], "path_id": ["a"] * 6 + ["b"] * 6}),
    }
    found = pd.DataFrame({"start": [times[24], times[30]], "end_time": [times[40], None],
                          "detected_at": [times[25], times[31]], "kind": ["loss_step", "throughput_drop"]})
    fig = helpers.plot_path(series, found, title="a → b", start=times[0], end=times[-1])
    try:
        assert len(fig.axes) == 4
        for ax in fig.axes:
            assert len(ax.patches) == 2, "one shaded span per anomaly on every panel"
        # The open anomaly runs to the end of the window.
        right = max(p.get_x() + p.get_width() for p in fig.axes[0].patches)
        assert right == pytest.approx(matplotlib.dates.date2num(times[-1]))
        assert [t.get_text() for t in fig.axes[3].get_yticklabels()] == ["route 1", "route 2"]
    finally:
        plt.close(fig)


def test_parameters_are_injected_and_the_kernel_is_this_python(tmp_path):
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("X = 1\nNAME = 'default'", metadata={"tags": ["parameters"]}),
        nbformat.v4.new_code_cell("import json, os, sys\nprint(json.dumps({'x': X, 'name': NAME, "
                                  "'python': sys.executable, 'env': os.environ.get('PATHWATCH_LAB_TEST')}))",
                                  metadata={"tags": ["summary"]}),
    ], metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}})
    path = tmp_path / "probe.ipynb"
    nbformat.write(nb, path)
    assert [c.source for c in inject_parameters(nb, {}).cells] == [c.source for c in nb.cells]
    done = execute(path, {"X": 42, "NAME": "given"}, env={**os.environ, "PATHWATCH_LAB_TEST": "seen"}, timeout=120)
    out = json.loads(tagged_output(done, "summary"))
    assert out["x"] == 42 and out["name"] == "given" and out["env"] == "seen"
    assert Path(out["python"]).resolve() == Path(sys.executable).resolve()


def test_a_failing_cell_fails_the_run(tmp_path):
    from nbclient.exceptions import CellExecutionError

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("raise ValueError('boom')")],
                                  metadata={"kernelspec": {"name": "python3", "display_name": "Python 3"}})
    nbformat.write(nb, tmp_path / "fails.ipynb")
    with pytest.raises(CellExecutionError, match="boom"):
        execute(tmp_path / "fails.ipynb", timeout=120)


def test_backtest_sweep_reaches_the_detectors(tmp_path):
    data = backtest.labelled_set(tmp_path / "sim", seed=7, hosts=4, days=6)
    labels = (tmp_path / "sim" / "labels.jsonl").read_text().splitlines()
    assert len(data.labels) == len(labels) and data.records
    assert "throughput_drop" in {x.kind for x in data.labels}
    table = backtest.sweep(data, "levels", "tput_drop_frac", [0.3, 0.6], kinds=["all", "throughput_drop"])
    assert table[["value", "kind"]].values.tolist() == [[0.3, "all"], [0.3, "throughput_drop"],
                                                         [0.6, "all"], [0.6, "throughput_drop"]]
    drop = table[table["kind"] == "throughput_drop"].set_index("value")
    assert (drop["labels"] == 1).all()
    # A drop must now be a 60 % fall: the injected one no longer counts, so the override reached the detector.
    assert drop.loc[0.3, "recall"] == 1.0 and drop.loc[0.6, "recall"] == 0.0
    assert (table[table["kind"] == "all"]["labels"] == len(labels)).all()
    with pytest.raises(ValueError, match="unknown detector"):
        backtest.sweep(data, "nonsense", "x", [1])


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_pathwatch_notebook_serves_jupyterlab_behind_its_token(tmp_path):
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PATHWATCH_")}
    env["PATHWATCH_HOME"] = str(tmp_path / "home")  # no stack there: --dsn supplies the database
    process = subprocess.Popen([sys.executable, "-c", "from pathwatch.cli import main; main()", "notebook",
                                "--no-browser", "--port", str(port), "--dsn", "postgresql://pathwatch_ro@127.0.0.1:1/x"],
                               env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               start_new_session=True)
    try:
        first = process.stdout.readline()
        assert first.startswith(f"JupyterLab on http://127.0.0.1:{port}/lab?token="), first
        token = first.strip().rsplit("token=", 1)[1]
        assert len(token) >= 24
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 90
        while True:
            try:
                answer = requests.get(f"{base}/api/status", headers={"Authorization": f"token {token}"}, timeout=5)
                break
            except requests.ConnectionError:
                assert process.poll() is None, process.stdout.read()
                assert time.monotonic() < deadline, "JupyterLab did not answer within 90 s"
                time.sleep(0.5)
        assert answer.status_code == 200
        assert requests.get(f"{base}/api/contents", timeout=5).status_code == 403
        contents = requests.get(f"{base}/api/contents", headers={"Authorization": f"token {token}"}, timeout=5).json()
        assert set(NOTEBOOKS) <= {c["name"] for c in contents["content"]}
        specs = requests.get(f"{base}/api/kernelspecs", headers={"Authorization": f"token {token}"}, timeout=5).json()
        argv = specs["kernelspecs"]["python3"]["spec"]["argv"]
        assert Path(argv[0]).resolve() == Path(sys.executable).resolve()
    finally:
        os.killpg(process.pid, 15)
        process.wait(timeout=30)


def test_the_vetoed_table_says_why_a_change_did_not_alarm():
    """An RTT that creeps 10 ms up within an hour (a queue filling, no step) raises nothing; the
    table names the veto that held it, for that path only, with times as UTC timestamps."""
    base = 1_767_571_200.0
    records = []
    for i in range(180):
        t = base + i * 240.0
        hours = i * 240.0 / 3600
        value = 50.0 + min(10.0, max(0.0, 10.0 * (hours - 4))) + (i % 3) * 0.1
        for dst in ("anchor", "other"):
            records.append({"kind": "latency", "id": f"{dst}-{i}", "source": "probe", "destination": dst,
                            "time": datetime.fromtimestamp(t, timezone.utc).isoformat().replace("+00:00", "Z"),
                            "one_way": False, "packets_sent": 3, "packets_lost": 0, "delay_min_ms": value})
    table = backtest.vetoed_table(records, source="probe", destination="anchor")
    assert table["veto"].tolist() == ["crept"] and table["verdict"].tolist() == ["hold"]
    assert set(table["destination"]) == {"anchor"} and str(table["start"].dt.tz) == "UTC"
    assert table.loc[0, "level_ms"] > table.loc[0, "baseline_ms"]
