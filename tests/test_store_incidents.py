"""The store job's anomalies sink carries each anomaly's incident (sql/006, anomaly contract v2).

The job's own source columns and SELECT (streaming/store_job.py) run on a local PyFlink batch
environment over JSON lines in the topic's format: a v2 record keeps its incident_id, a v1
record (no incident_id) is stored as its own incident. The sink's columns are columns of the
``anomalies`` table as the migrations leave it.
"""

from __future__ import annotations

import json
import re

from pathwatch.models.anomaly import Anomaly
from pathwatch.sql import migrations
from pathwatch.streaming.store_job import ANOMALIES_SELECT, ANOMALY_FIELDS, SINKS


def _anomaly(kind: str, start: float) -> Anomaly:
    return Anomaly.open(kind, "ps-a.example", "ps-b.example", start=start, detected_at=start + 600.0,
                        severity="warning", score=0.5, summary=f"{kind} on a → b", evidence={"k": [1, 2]})


def _names(columns: str) -> list[str]:
    return [re.sub(r"[`\s]", "", part.split()[0]) for part in re.split(r",\s*(?![^<]*>)", columns.strip())]


def _table_columns(table: str) -> set[str]:
    """Columns of ``table`` after every migration: its CREATE TABLE plus each ALTER TABLE ... ADD COLUMN."""
    columns: set[str] = set()
    for migration in migrations():
        created = re.search(rf"CREATE TABLE {table} \((.*?)\n\);", migration.sql, re.S)
        if created:
            for line in created.group(1).splitlines():
                line = line.split("--")[0].strip()
                if line and not line.upper().startswith(("PRIMARY KEY", "UNIQUE", "CONSTRAINT")):
                    columns.add(line.split()[0])
        columns.update(re.findall(rf"ALTER TABLE {table} ADD COLUMN (\w+)", migration.sql))
    return columns


def test_the_anomalies_sink_writes_only_columns_the_table_has_and_names_the_incident():
    sink_columns = _names(SINKS["anomalies_sink"][1])
    assert "incident_id" in sink_columns
    assert set(sink_columns) <= _table_columns("anomalies")


def test_store_select_keeps_a_v2_incident_and_makes_a_v1_record_its_own(tmp_path):
    from pyflink.table import EnvironmentSettings, TableEnvironment

    root = _anomaly("route_change", 1000.0)
    member = _anomaly("latency_shift", 1600.0).in_incident(root.id)
    v1 = {k: v for k, v in _anomaly("loss_step", 5000.0).to_dict().items() if k != "incident_id"}
    folder = tmp_path / "anomalies"
    folder.mkdir()
    (folder / "part-0.json").write_text("".join(json.dumps(x) + "\n" for x in (root.to_dict(), member.to_dict(), v1)))

    tables = TableEnvironment.create(EnvironmentSettings.in_batch_mode())
    tables.get_config().set("parallelism.default", "1")
    tables.execute_sql(f"""CREATE TABLE anomalies_json ({ANOMALY_FIELDS}) WITH (
        'connector' = 'filesystem', 'path' = '{folder.as_uri()}', 'format' = 'json',
        'json.fail-on-missing-field' = 'false', 'json.ignore-parse-errors' = 'false')""")
    result = tables.execute_sql(ANOMALIES_SELECT)
    fields = result.get_table_schema().get_field_names()
    with result.collect() as rows:
        stored = {row[0]: dict(zip(fields, row)) for row in rows}

    # The SELECT feeds the sink column by column (the contract's `end` into end_time).
    assert [("end_time" if f == "end" else f) for f in fields] == _names(SINKS["anomalies_sink"][1])
    assert stored[root.id]["incident_id"] == root.id
    assert stored[member.id]["incident_id"] == root.id
    assert stored[v1["id"]]["incident_id"] == v1["id"]
    assert json.loads(stored[member.id]["evidence"]) == {"k": [1, 2]}
