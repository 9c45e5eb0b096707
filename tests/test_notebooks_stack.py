"""Every notebook, top to bottom, against the data the pipeline stored on the test stack.

Uses the session's stream (tests/stack/streamed.py): a simulated mesh through the real
pipeline into the test stack's database. Each notebook runs in a fresh kernel (this venv's
python) with only the read-only DSN in its environment, and fails the test on any error; then
what it printed in its ``summary`` cell is checked against the database (through the owner's
DSN, with queries of the test's own) and its figures are counted. Where a notebook lists
anomalies it shows incidents first (grouped by incident_id, the root first), checked the same way.
"""

from __future__ import annotations

import hashlib
import json
import os
import uuid

import pytest

from pathwatch.notebooks.runner import NOTEBOOK_DIR, execute, tagged_output

pytestmark = pytest.mark.stack


@pytest.fixture(scope="module")
def stacked(stream):
    from pathwatch import stack

    current = stack.status(stack.resolve(home=stream["home"], environ=stream["env"]))
    env = {k: v for k, v in os.environ.items() if not k.startswith("PATHWATCH_")}
    env["PATHWATCH_HOME"] = str(stream["home"])
    env["PATHWATCH_DATABASE_URL_READONLY"] = current.database_url_readonly
    return {"env": env, "owner": current.database_url, "readonly": current.database_url_readonly}


def _run(name: str, stacked, parameters=None, tmp_path=None):
    nb = execute(NOTEBOOK_DIR / name, parameters or {}, env=stacked["env"], timeout=300,
                 cwd=tmp_path or NOTEBOOK_DIR)
    return nb, json.loads(tagged_output(nb, "summary"))


def _figures(nb) -> int:
    return sum("image/png" in out.get("data", {}) for cell in nb.cells for out in cell.get("outputs", []))


def _tables(nb) -> int:
    return sum("text/html" in out.get("data", {}) and "<table" in out["data"]["text/html"]
               for cell in nb.cells for out in cell.get("outputs", []))


def _one(url: str, sql: str, args=()):
    import psycopg

    with psycopg.connect(url) as connection:
        return connection.execute(sql, args).fetchone()


def test_the_notebook_role_cannot_write(stacked):
    import psycopg

    from pathwatch import notebooks as helpers

    # The session is read-only even where the role could write (a temporary table, or an owner DSN).
    for url in (stacked["readonly"], stacked["owner"]):
        with helpers.connect(url) as connection:
            with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
                connection.execute("CREATE TEMP TABLE scratch (a int)")
    with psycopg.connect(stacked["readonly"], autocommit=True) as connection:
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            connection.execute("DELETE FROM anomalies")


def test_01_explore_path_shows_the_most_eventful_path(stacked):
    nb, out = _run("01_explore_path.ipynb", stacked)
    owner = stacked["owner"]
    src, dst, start, end = out["source"], out["destination"], out["start"], out["end"]
    most_kinds = _one(owner, """SELECT max(n) FROM (SELECT count(DISTINCT kind) AS n FROM anomalies
                                WHERE source IS NOT NULL GROUP BY source, destination) x""")[0]
    kinds = _one(owner, "SELECT count(DISTINCT kind) FROM anomalies WHERE source = %s AND destination = %s", (src, dst))[0]
    assert kinds == most_kinds > 0
    for table in ("throughput", "latency", "trace"):
        count = _one(owner, f"SELECT count(*) FROM {table} WHERE source = %s AND destination = %s "
                            "AND time >= %s AND time < %s", (src, dst, start, end))[0]
        assert out["rows"][table] == count > 0, table
    ids = {str(r) for r in _rows(owner, """SELECT id FROM anomalies WHERE source = %s AND destination = %s
                                          AND start < %s AND coalesce(end_time, 'infinity') > %s""",
                                 (src, dst, end, start))}
    assert set(out["anomaly_ids"]) == ids and out["anomalies"] == len(ids) > 0
    # Incidents first: every incident with a member on the path in the window, once; its anomalies grouped under it.
    incidents = {str(r) for r in _rows(owner, """SELECT DISTINCT incident_id FROM anomalies WHERE source = %s
                                                AND destination = %s AND start < %s
                                                AND coalesce(end_time, 'infinity') > %s""", (src, dst, end, start))}
    assert sorted(out["incident_ids"]) == sorted(incidents) and 0 < len(incidents) <= len(ids)
    stored = dict(_pairs(owner, "SELECT id::text, incident_id::text FROM anomalies WHERE id::text = ANY(%s)",
                         ([i for i, _ in out["grouped_ids"]],)))
    assert {i for i, _ in out["grouped_ids"]} == ids and all(stored[i] == k for i, k in out["grouped_ids"])
    order = [k for _, k in out["grouped_ids"]]
    assert order == sorted(order, key=order.index), "an incident's anomalies are listed together"
    routes = _one(owner, "SELECT count(DISTINCT path_id), count(*) FROM trace WHERE source = %s AND destination = %s "
                         "AND time >= %s AND time < %s", (src, dst, start, end))
    assert (out["routes"], out["route_traces"]) == routes
    max_ttl = _one(owner, """SELECT max(h.ttl) FROM trace t JOIN trace_hops h USING (path_id)
                             WHERE t.source = %s AND t.destination = %s AND t.time >= %s AND t.time < %s""",
                   (src, dst, start, end))[0]
    assert out["hop_rows"] == max_ttl
    assert _figures(nb) == 1
    assert _tables(nb) >= 6  # overview, counts, incidents, anomalies by incident, routes, hop table


def _pairs(url: str, sql: str, args=()):
    import psycopg

    with psycopg.connect(url) as connection:
        return [tuple(row) for row in connection.execute(sql, args).fetchall()]


def _rows(url: str, sql: str, args=()):
    import psycopg

    with psycopg.connect(url) as connection:
        return [row[0] for row in connection.execute(sql, args).fetchall()]


def test_04_investigates_the_default_anomaly_and_a_given_one(stacked):
    owner = stacked["owner"]
    nb, out = _run("04_investigate_anomaly.ipynb", stacked)
    row = _one(owner, "SELECT kind, source, destination FROM anomalies WHERE id = %s", (out["anomaly_id"],))
    assert row == (out["kind"], out["source"], out["destination"])
    worst = _one(owner, "SELECT max(severity_rank(severity)) FROM anomalies")[0]
    assert _one(owner, "SELECT severity_rank(severity) FROM anomalies WHERE id = %s", (out["anomaly_id"],))[0] == worst
    _check_context(owner, out)
    # evidence, its incident's members, routes, hops, neighbours, suspicion, the mesh's incidents and their anomalies
    assert _figures(nb) == 1 and _tables(nb) >= 8

    # A given id (a route change, where hops matter most) is the one investigated.
    given = _one(owner, "SELECT id FROM anomalies WHERE kind = 'route_change' ORDER BY start LIMIT 1")
    assert given is not None, "the streamed mesh has no route change"
    nb, out = _run("04_investigate_anomaly.ipynb", stacked, {"ANOMALY_ID": str(given[0]), "MARGIN_HOURS": 6})
    assert out["anomaly_id"] == str(given[0]) and out["kind"] == "route_change"
    _check_context(owner, out)

    # An unknown id fails the run, naming it.
    from nbclient.exceptions import CellExecutionError

    missing = str(uuid.uuid4())
    with pytest.raises(CellExecutionError, match=missing):
        _run("04_investigate_anomaly.ipynb", stacked, {"ANOMALY_ID": missing})


def _check_context(owner: str, out: dict) -> None:
    src, dst, start, end = out["source"], out["destination"], out["start"], out["end"]
    for table in ("throughput", "latency", "trace"):
        count = _one(owner, f"SELECT count(*) FROM {table} WHERE source = %s AND destination = %s "
                            "AND time >= %s AND time < %s", (src, dst, start, end))[0]
        assert out["rows"][table] == count, table
    assert out["mesh_anomalies"] == _one(owner, "SELECT count(*) FROM anomalies WHERE start < %s "
                                                "AND coalesce(end_time, 'infinity') > %s", (end, start))[0]
    ours = set(_rows(owner, """SELECT DISTINCT h.ip FROM trace t JOIN trace_hops h USING (path_id)
                               WHERE t.source = %s AND t.destination = %s AND t.time >= %s AND t.time < %s
                                 AND h.ip IS NOT NULL""", (src, dst, start, end)))
    assert ours, "the path has traces with answering hops in the window"
    for n_src, n_dst in out["neighbours"]:
        assert (n_src, n_dst) != (src, dst)
        theirs = set(_rows(owner, """SELECT DISTINCT h.ip FROM trace t JOIN trace_hops h USING (path_id)
                                     WHERE t.source = %s AND t.destination = %s AND t.time >= %s AND t.time < %s""",
                           (n_src, n_dst, start, end)))
        assert ours & theirs, f"{n_src} → {n_dst} listed as sharing hops but shares none"
    assert set(out["suspect_hops"]) <= ours
    # The incident it belongs to, with every member (on any path), and the mesh's incidents in the window.
    incident = _one(owner, "SELECT incident_id::text FROM anomalies WHERE id = %s", (out["anomaly_id"],))[0]
    assert out["incident_id"] == incident
    members = [str(r) for r in _rows(owner, "SELECT id FROM anomalies WHERE incident_id = %s", (incident,))]
    assert sorted(out["incident_members"]) == sorted(members) and out["anomaly_id"] in members
    assert out["incident_members"][0] == out["root_id"]  # the root first
    assert _one(owner, "SELECT root_id::text FROM incidents WHERE incident_id = %s", (incident,))[0] == out["root_id"]
    mesh = {str(r) for r in _rows(owner, """SELECT DISTINCT incident_id FROM anomalies WHERE start < %s
                                           AND coalesce(end_time, 'infinity') > %s""", (end, start))}
    assert sorted(out["mesh_incident_ids"]) == sorted(mesh) and out["mesh_grouped"] == out["mesh_anomalies"]


def test_02_backtest_sweeps_the_parameter_over_a_labelled_mesh(stacked, tmp_path):
    values = [3600, 86400]
    kinds = ["all", "throughput_drop"]
    nb, out = _run("02_backtest_detectors.ipynb", stacked,
                   {"WORKDIR": str(tmp_path / "sim"), "VALUES": values, "KINDS": kinds}, tmp_path)
    labels = (tmp_path / "sim" / f"seed-{7}" / "labels.jsonl").read_text().splitlines()
    assert out["labels"] == len(labels) > 0
    rows = out["rows"]
    assert [(r["value"], r["kind"]) for r in rows] == [(v, k) for v in values for k in kinds]
    for r in rows:
        assert r["precision"] is None or 0 <= r["precision"] <= 1
        assert r["recall"] is None or 0 <= r["recall"] <= 1
    assert all(r["labels"] == len(labels) for r in rows if r["kind"] == "all")
    # The default run's anomalies as incidents: each anomaly in exactly one, one row per incident id.
    assert out["incident_members"] == out["anomalies"] > 0
    assert 0 < out["incidents"] == len(out["incident_ids"]) <= out["anomalies"]
    drop = {r["value"]: r for r in rows if r["kind"] == "throughput_drop"}
    # Asking low throughput to last a day before calling it a drop cannot detect it sooner.
    assert drop[86400]["delay_median_h"] >= drop[3600]["delay_median_h"]
    assert _figures(nb) == 1 and _tables(nb) >= 3


def test_03_trains_compares_and_exports_without_touching_the_artifact(stacked, tmp_path):
    from pathwatch.models.run_cause import ARTIFACT, FEATURES, RunCauseModel

    before = hashlib.sha256(ARTIFACT.read_bytes()).hexdigest(), ARTIFACT.with_suffix(".json").read_text()
    target = tmp_path / "model" / "run_cause.joblib"
    nb, out = _run("03_train_model.ipynb", stacked, {"OUT": str(target), "WORKDIR": str(tmp_path / "sims")}, tmp_path)
    assert (hashlib.sha256(ARTIFACT.read_bytes()).hexdigest(), ARTIFACT.with_suffix(".json").read_text()) == before
    assert out["out"] == str(target) and target.exists() and target.with_suffix(".json").exists()
    model = RunCauseModel.load(target)  # the way the streaming job loads it
    assert model.meta["features"] == list(FEATURES) and model.meta["version"] == out["meta"]["version"]
    assert model.meta["train_runs"] == out["train_runs"] > 0 and model.meta["test_runs"] == out["test_runs"] > 0
    assert set(out["held_out"]) == {"new model", "current artifact", "rules"}
    assert out["held_out"]["new model"] == model.meta["held_out"]["model"]
    assert _figures(nb) == 2  # confusion matrices, feature importances

    # Refuses to overwrite the committed artifact unless told to.
    from nbclient.exceptions import CellExecutionError

    with pytest.raises(CellExecutionError, match="REPLACE_COMMITTED"):
        _run("03_train_model.ipynb", stacked, {"OUT": str(ARTIFACT), "WORKDIR": str(tmp_path / "sims")}, tmp_path)
    assert hashlib.sha256(ARTIFACT.read_bytes()).hexdigest() == before[0]
