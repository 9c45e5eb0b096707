"""The dashboards on the real stack, over the data the pipeline stored (tests/stack/streamed.py).

`stack up` imported the bundle; every dataset's columns are columns of its SQL in the database;
the incidents view agrees with the anomalies table it groups; every chart answers through
Superset's chart-data API; an edited bundle re-imports and the export round-trips; Chromium opens
every dashboard, every chart draws without error, and none is empty where the database has rows
for it; the Incident filter narrows the Anomalies dashboard to one incident and its members.
Screenshots go to the test stack's logs/screenshots/.
"""

from __future__ import annotations

import shutil

import pytest
import yaml

from pathwatch.dashboards.bundle import BUNDLE
from tests.stack.dashboards_check import (CHARTS, DASHBOARDS, DATASETS, FILES, Browser, base_sql, chart_ids_on,
                                          expected_rows, slice_id)
from tests.stack.dashboards_check import site  # noqa: F401  (the fixture)
from tests.stack.streamed import cli

pytestmark = pytest.mark.stack


def test_stack_up_imported_every_dashboard_and_chart(site):
    slugs = {d["slug"] for d in site["superset"].dashboards()}
    assert set(DASHBOARDS) <= slugs
    assert set(CHARTS) <= set(site["chart_ids"])


@pytest.mark.parametrize("uuid", sorted(CHARTS, key=lambda u: CHARTS[u]["slice_name"]))
def test_chart_data_api_answers_and_is_not_empty_where_data_exists(site, uuid):
    chart = CHARTS[uuid]
    answer = site["superset"].chart_data(site["chart_ids"][uuid])
    (result,) = answer["result"]
    assert result.get("error") is None and result["status"] == "success", result
    query = chart["query_context"]["queries"][0]
    rows = expected_rows(site["database_url"], DATASETS[str(chart["dataset_uuid"])], query["extras"]["where"])
    if rows:
        assert result["rowcount"] > 0, f"{chart['slice_name']}: empty, but the database has {rows} rows for it"


def test_an_edited_bundle_reimports_and_the_export_round_trips(site, tmp_path):
    edited = tmp_path / "bundle"
    shutil.copytree(BUNDLE, edited)
    path = edited / "charts" / "open_total.yaml"
    chart = yaml.safe_load(path.read_text())
    chart["slice_name"] = "Open anomalies right now"
    path.write_text(yaml.safe_dump(chart, sort_keys=False, allow_unicode=True, width=110))
    home = site["home"]
    try:
        cli(home, "dashboards", "import", "--bundle", str(edited))
        chart_id = site["chart_ids"][str(chart["uuid"])]
        assert site["superset"].chart(chart_id)["slice_name"] == "Open anomalies right now"
        cli(home, "dashboards", "export", "--bundle", str(edited), "--check")
    finally:
        cli(home, "dashboards", "import")
    cli(home, "dashboards", "export", "--check")  # the repository's bundle, exactly


@pytest.fixture(scope="module")
def browser(site):
    shots = site["home"] / "logs" / "screenshots"
    shutil.rmtree(shots, ignore_errors=True)
    session = Browser(site["url"], site["user"], site["password"], shots)
    yield session
    session.close()


@pytest.mark.parametrize("slug", sorted(DASHBOARDS))
def test_browser_draws_every_chart_of_the_dashboard(site, browser, slug):
    ids = chart_ids_on(site, slug)
    answers = browser.open_dashboard(slug, len(ids))
    shot = browser.screenshot(slug)
    latest = {slice_id(a): a for a in answers if slice_id(a) in ids}
    assert set(latest) == set(ids), f"{slug}: no data request for {sorted(set(ids) - set(latest))} ({shot})"
    for chart_id, answer in latest.items():
        chart = CHARTS[ids[chart_id]]
        assert answer["status"] == 200, f"{chart['slice_name']}: HTTP {answer['status']} {answer['body']}"
        (result,) = answer["body"]["result"]
        assert result.get("error") is None, f"{chart['slice_name']}: {result.get('error')}"
        query = answer["request"]["queries"][0]
        window = (result["from_dttm"], result["to_dttm"]) if result.get("from_dttm") else None
        rows = expected_rows(site["database_url"], DATASETS[str(chart["dataset_uuid"])],
                             query.get("extras", {}).get("where", ""), query.get("filters", []), window)
        if rows:
            assert result["rowcount"] > 0, f"{slug}: {chart['slice_name']} empty with {rows} rows in range ({shot})"
    assert browser.chart_errors() == [], f"{slug}: error shown ({shot})"


def test_an_anomaly_links_to_the_path_explorer_filtered_on_its_path(site, browser):
    """The analyst's drill-down: a path in the anomaly tables opens the Path explorer on that path alone."""
    browser.open_dashboard("anomalies", len(chart_ids_on(site, "anomalies")))
    links = browser.links("/superset/dashboard/path-explorer/")
    assert links, "the anomaly tables show no link to the Path explorer"
    href, path = links[0]
    explorer = chart_ids_on(site, "path-explorer")
    answers = browser.open(href, len(explorer))
    shot = browser.screenshot("path-explorer-from-anomaly")
    with_path = {chart_id for chart_id, uuid in explorer.items()
                 if any(c["column_name"] == "path" for c in DATASETS[str(CHARTS[uuid]["dataset_uuid"])]["columns"])}
    assert with_path, "no Path explorer chart reads a dataset with a path column"
    latest = {slice_id(a): a for a in answers if slice_id(a) in with_path}
    assert set(latest) == with_path, f"no data request for {sorted(with_path - set(latest))} ({shot})"
    for chart_id, answer in latest.items():
        filters = answer["request"]["queries"][0].get("filters", [])
        assert {"col": "path", "op": "IN", "val": [path]} in filters, \
            f"{CHARTS[explorer[chart_id]]['slice_name']}: not filtered on {path!r}: {filters} ({shot})"


def _query(database_url: str, sql: str, args=()):
    import psycopg

    with psycopg.connect(database_url) as connection:
        cursor = connection.execute(sql, args)
        return [c.name for c in cursor.description], cursor.fetchall()


@pytest.mark.parametrize("path", sorted(p for p in FILES if p.startswith("datasets/")))
def test_every_dataset_column_is_a_column_of_its_sql(site, path):
    dataset = FILES[path]
    names, _ = _query(site["database_url"], f"SELECT * FROM ({base_sql(dataset)}) d LIMIT 0")
    plain = {c["column_name"] for c in dataset["columns"] if not c.get("expression")}
    assert plain <= set(names), f"{dataset['table_name']}: not in the database: {sorted(plain - set(names))}"


def test_the_incidents_view_agrees_with_the_anomalies_table(site):
    """One row per incident_id, each the aggregate of its member rows; one root row per incident on the board."""
    url = site["database_url"]
    _, members = _query(url, """
        SELECT incident_id, count(*), count(DISTINCT source || '>' || destination), min(start),
               bool_or(end_time IS NULL), CASE WHEN bool_or(end_time IS NULL) THEN NULL ELSE max(end_time) END,
               max(severity_rank(severity)), string_agg(DISTINCT kind, ', ' ORDER BY kind)
        FROM anomalies GROUP BY incident_id""")
    assert members, "the stream stored no anomalies"
    _, rows = _query(url, """
        SELECT incident_id, member_count, path_count, start, is_open, end_time, severity_rank, member_kinds,
               root_id, root_kind, incident FROM incidents""")
    assert len(rows) == len({r[0] for r in rows}), "an incident listed twice"
    by_id = {r[0]: r for r in rows}
    assert set(by_id) == {m[0] for m in members}
    for member in members:
        assert by_id[member[0]][:8] == member, f"incident {member[0]}"
    _, nulls = _query(url, "SELECT count(*) FROM anomalies WHERE incident_id IS NULL")
    assert nulls == [(0,)]
    # The root: the anomaly whose id is the incident's (when stored in that incident), of the kind the view names.
    _, roots = _query(url, "SELECT id, kind FROM anomalies WHERE id = incident_id")
    for root_id, kind in roots:
        assert by_id[root_id][8:10] == (root_id, kind)
    _, board = _query(url, """SELECT incident_id, count(*) FILTER (WHERE is_root), count(*), min(incident), max(incident)
                              FROM anomalies_board GROUP BY incident_id""")
    for incident_id, root_rows, count, label, same in board:
        assert root_rows == 1 and count == by_id[incident_id][1] and label == same == by_id[incident_id][10]
    # mesh_status counts open incidents per path, not anomaly rows.
    _, paths = _query(url, """SELECT m.source, m.destination, m.open_incidents,
                                     (SELECT count(DISTINCT incident_id) FROM anomalies a WHERE a.source = m.source
                                        AND a.destination = m.destination AND a.end_time IS NULL)
                              FROM mesh_status m""")
    assert paths and all(found == expected for _, _, found, expected in paths)


def test_the_incident_filter_shows_one_incident_and_its_members(site, browser):
    """Members on demand: choosing an incident narrows the incidents table to it and the anomaly tables to its members."""
    from urllib.parse import quote

    _, chosen = _query(site["database_url"], """SELECT incident, member_count FROM incidents
                                                ORDER BY is_open DESC, member_count DESC, start LIMIT 1""")
    assert chosen, "the stream stored no incidents"
    (label, members), = chosen
    rison = (f"(NATIVE_FILTER-incident:(extraFormData:(filters:!((col:incident,op:IN,val:!('{label}')))),"
             f"filterState:(value:!('{label}')),id:NATIVE_FILTER-incident,ownState:()))")
    ids = chart_ids_on(site, "anomalies")
    answers = browser.open("/superset/dashboard/anomalies/?native_filters=" + quote(rison, safe="(),:!'"), len(ids))
    shot = browser.screenshot("anomalies-one-incident")
    latest = {slice_id(a): a for a in answers if slice_id(a) in ids}
    with_incident = {chart_id for chart_id, uuid in ids.items()
                     if any(c["column_name"] == "incident" for c in DATASETS[str(CHARTS[uuid]["dataset_uuid"])]["columns"])}
    assert with_incident and with_incident <= set(latest), f"no data request for {sorted(with_incident - set(latest))}"
    for chart_id in with_incident:
        chart, answer = CHARTS[ids[chart_id]], latest[chart_id]
        query = answer["request"]["queries"][0]
        assert {"col": "incident", "op": "IN", "val": [label]} in query.get("filters", []), \
            f"{chart['slice_name']}: not filtered on the incident ({shot})"
        (result,) = answer["body"]["result"]
        assert result.get("error") is None, f"{chart['slice_name']}: {result.get('error')}"
        window = (result["from_dttm"], result["to_dttm"]) if result.get("from_dttm") else None
        rows = expected_rows(site["database_url"], DATASETS[str(chart["dataset_uuid"])],
                             query.get("extras", {}).get("where", ""), query.get("filters", []), window)
        if chart["params"].get("query_mode") == "raw":  # a table: one line per row
            assert result["rowcount"] == rows, f"{chart['slice_name']}: {result['rowcount']} rows, {rows} in the database ({shot})"
        else:  # aggregates: something exactly when the incident has rows for it
            assert (result["rowcount"] > 0) == (rows > 0), f"{chart['slice_name']}: {result['rowcount']} for {rows} rows ({shot})"
        if DATASETS[str(chart["dataset_uuid"])]["table_name"] == "anomalies":
            assert rows <= members, f"{chart['slice_name']}: more rows than the incident has members"
    assert browser.chart_errors() == [], f"anomalies with one incident: error shown ({shot})"
