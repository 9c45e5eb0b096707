"""The Superset bundle in dashboards/bundle/ hangs together: every reference resolves, every
column and metric a chart uses exists in its dataset, and the import/export transforms invert."""

from __future__ import annotations

import json
import zipfile
import io

import pytest

from pathwatch.dashboards.bundle import (URI_PLACEHOLDER, differences, for_superset, from_export, read_bundle,
                                         zip_bundle)

FILES = read_bundle()
DATASETS = {str(d["uuid"]): d for p, d in FILES.items() if p.startswith("datasets/")}
CHARTS = {p: d for p, d in FILES.items() if p.startswith("charts/")}
DASHBOARDS = {p: d for p, d in FILES.items() if p.startswith("dashboards/")}
KINDS = ("route_change", "diurnal_saturation", "rising_loss", "mtu_blackhole", "window_limited", "throughput_drop",
         "latency_shift", "loss_step", "clock_error", "unreachable", "no_data")


def _columns(dataset):
    return {c["column_name"] for c in dataset["columns"]}


def _metrics(dataset):
    return {m["metric_name"] for m in dataset["metrics"]}


def _chart_columns(chart) -> set[str]:
    """Every dataset column a chart's params or queries name."""
    params, names = chart["params"], set()
    for key in ("x_axis", "y_axis", "series", "start_time", "end_time"):
        if isinstance(params.get(key), str):
            names.add(params[key])
    for key in ("groupby", "all_columns", "tooltip_columns"):
        value = params.get(key) or []
        names.update([value] if isinstance(value, str) else value)
    for entry in params.get("order_by_cols", []):
        names.add(json.loads(entry)[0])
    for flt in params.get("adhoc_filters", []):
        if flt["expressionType"] == "SIMPLE":
            names.add(flt["subject"])
    for query in chart["query_context"]["queries"]:
        for column in query["columns"]:
            names.add(column["sqlExpression"] if isinstance(column, dict) else column)
        for flt in query["filters"]:
            names.add(flt["col"])
    return names


def test_there_are_the_six_dashboards_an_analyst_asked_for():
    assert {d["slug"] for d in DASHBOARDS.values()} == {
        "mesh-overview", "anomalies", "path-explorer", "route-changes", "loss-trends", "daily-patterns"}


def test_uuids_are_unique():
    uuids = [str(d["uuid"]) for p, d in FILES.items() if "uuid" in d]
    assert len(uuids) == len(set(uuids))


def test_every_dataset_is_on_the_bundle_database():
    databases = {str(d["uuid"]) for p, d in FILES.items() if p.startswith("databases/")}
    assert FILES["databases/pathwatch.yaml"]["sqlalchemy_uri"] == URI_PLACEHOLDER
    assert all(str(d["database_uuid"]) in databases for d in DATASETS.values())


@pytest.mark.parametrize("path", sorted(CHARTS))
def test_chart_uses_only_columns_and_metrics_of_its_dataset(path):
    chart = CHARTS[path]
    dataset = DATASETS[str(chart["dataset_uuid"])]
    missing = _chart_columns(chart) - _columns(dataset)
    assert not missing, f"{path}: columns not in dataset {dataset['table_name']}: {sorted(missing)}"
    params = chart["params"]
    used = set(params.get("metrics") or []) | ({params["metric"]} if params.get("metric") else set())
    assert used <= _metrics(dataset), f"{path}: metrics not in dataset {dataset['table_name']}"


@pytest.mark.parametrize("path", sorted(CHARTS))
def test_saved_query_asks_for_what_the_chart_shows(path):
    chart = CHARTS[path]
    params, (query,) = chart["params"], chart["query_context"]["queries"]
    shown = list(params.get("metrics") or []) + ([params["metric"]] if params.get("metric") else [])
    assert (query["metrics"] or []) == shown  # a raw table asks for no metrics (None: no GROUP BY)
    if params.get("query_mode") == "raw":
        assert query["columns"] == params["all_columns"]
    names = [c["sqlExpression"] if isinstance(c, dict) else c for c in query["columns"]]
    for key in ("x_axis", "y_axis", "start_time", "end_time"):
        if params.get(key):
            assert params[key] in names, f"{path}: {key} {params[key]} is not queried"
    assert query["row_limit"] == params["row_limit"]


def test_every_chart_is_on_a_dashboard_and_every_dashboard_chart_exists():
    chart_uuids = {str(c["uuid"]) for c in CHARTS.values()}
    placed = set()
    for path, dashboard in DASHBOARDS.items():
        for item in dashboard["position"].values():
            if isinstance(item, dict) and item.get("type") == "CHART":
                assert str(item["meta"]["uuid"]) in chart_uuids, f"{path}: {item['id']} names no chart"
                placed.add(str(item["meta"]["uuid"]))
    assert placed == chart_uuids


@pytest.mark.parametrize("path", sorted(DASHBOARDS))
def test_dashboard_has_the_filters_an_analyst_expects(path):
    filters = DASHBOARDS[path]["metadata"]["native_filter_configuration"]
    by_name = {f["name"]: f for f in filters}
    assert {"Time range", "Source", "Destination", "Site (either end)", "Anomaly kind"} <= set(by_name)
    for flt in filters:
        for target in flt["targets"]:
            if target:
                dataset = DATASETS[str(target["datasetUuid"])]
                assert target["column"]["name"] in _columns(dataset)


@pytest.mark.parametrize("path", sorted(p for p in FILES if p.startswith("datasets/")))
def test_path_datasets_honour_the_site_filter(path):
    dataset = FILES[path]
    if {"source_site", "destination_site"} <= _columns(dataset):
        assert "filter_values('site', remove_filter=True)" in dataset["sql"]


def test_import_form_round_trips_through_an_export_zip():
    payload = for_superset(FILES, "postgresql+psycopg2://ro:XXXXXXXXXX@db:5432/pathwatch")
    chart = json.loads(__import__("yaml").safe_load(payload["charts/open_total.yaml"])["query_context"])
    assert chart["form_data"] == FILES["charts/open_total.yaml"]["params"]
    archive = zip_bundle(payload)
    with zipfile.ZipFile(io.BytesIO(archive)) as handle:
        assert all(name.startswith("pathwatch_dashboards/") for name in handle.namelist())
    assert differences(FILES, from_export(archive)) == []


def test_export_leaves_out_other_databases_and_their_charts():
    payload = for_superset(FILES, "postgresql+psycopg2://ro:XXXXXXXXXX@db:5432/pathwatch")
    payload["databases/other.yaml"] = "database_name: other\nuuid: 00000000-0000-0000-0000-000000000001\n" \
                                      "sqlalchemy_uri: sqlite://\n"
    payload["datasets/other/t.yaml"] = "table_name: t\nuuid: 00000000-0000-0000-0000-000000000002\n" \
                                       "database_uuid: 00000000-0000-0000-0000-000000000001\n"
    exported = from_export(zip_bundle(payload), {str(FILES["databases/pathwatch.yaml"]["uuid"])})
    assert differences(FILES, exported) == []


def test_anomaly_kinds_in_chart_filters_are_real_kinds():
    for path, chart in CHARTS.items():
        for flt in chart["params"]["adhoc_filters"]:
            text = flt.get("sqlExpression") or ""
            for word in text.replace("(", " ").replace(")", " ").replace(",", " ").split():
                if word.startswith("'") and "_" in word:
                    assert word.strip("'") in KINDS, f"{path}: unknown kind {word}"


def test_dashboard_layouts_name_charts_as_the_charts_do():
    names = {str(c["uuid"]): c["slice_name"] for c in CHARTS.values()}
    for path, dashboard in DASHBOARDS.items():
        for item in dashboard["position"].values():
            if isinstance(item, dict) and item.get("type") == "CHART":
                assert item["meta"]["sliceName"] == names[str(item["meta"]["uuid"])], path


# --- incidents: the NOC sees incidents first, members on demand ----------------------------------

def base_sql(dataset) -> str:
    """The dataset's SQL before its Jinja clauses."""
    return dataset["sql"].split("{%", 1)[0]


def _by_table(name: str) -> dict:
    found = [d for d in DATASETS.values() if d["table_name"] == name]
    assert len(found) == 1, f"the bundle should have one dataset over the {name} view"
    return found[0]


def _charts_in_reading_order(slug: str) -> list[dict]:
    """The charts of a dashboard as a person reads them: depth-first from ROOT_ID."""
    (dashboard,) = [d for d in DASHBOARDS.values() if d["slug"] == slug]
    by_uuid = {str(c["uuid"]): c for c in CHARTS.values()}
    position, order, stack = dashboard["position"], [], ["ROOT_ID"]
    while stack:
        item = position.get(stack.pop())
        if not isinstance(item, dict):
            continue
        if item.get("type") == "CHART":
            order.append(by_uuid[str(item["meta"]["uuid"])])
        stack.extend(reversed(item.get("children", [])))
    return order


def _shown(chart) -> set[str]:
    params = chart["params"]
    return set(params.get("all_columns") or []) | set(params.get("groupby") or []) | (
        {params["x_axis"]} if isinstance(params.get("x_axis"), str) else set())


def _open_only(chart) -> bool:
    return chart["query_context"]["queries"][0]["extras"]["where"] == "(status = 'open')"


def test_the_incidents_dataset_reads_the_incidents_view():
    incidents = _by_table("incidents")
    assert base_sql(incidents).split() == ["SELECT", "*", "FROM", "incidents"]
    assert incidents["main_dttm_col"] == "start"
    assert {"incident_id", "incident", "root_kind", "location", "path_count", "member_count", "start", "end_time",
            "is_open", "severity", "ticket"} <= _columns(incidents)


def test_the_anomalies_dashboard_shows_open_incidents_first_then_their_members():
    first, second, *_ = _charts_in_reading_order("anomalies")
    assert DATASETS[str(first["dataset_uuid"])]["table_name"] == "incidents", first["slice_name"]
    assert _open_only(first)
    assert {"severity", "root_kind", "location", "path_count", "member_count", "start", "duration_h",
            "ticket_link"} <= _shown(first)
    assert DATASETS[str(second["dataset_uuid"])]["table_name"] == "anomalies", second["slice_name"]
    assert {"incident", "is_root", "kind", "path_link"} <= _shown(second)


def test_members_are_filterable_by_incident_on_the_anomalies_dashboard():
    (dashboard,) = [d for d in DASHBOARDS.values() if d["slug"] == "anomalies"]
    by_name = {f["name"]: f for f in dashboard["metadata"]["native_filter_configuration"]}
    assert "Incident" in by_name
    (target,) = by_name["Incident"]["targets"]
    column = target["column"]["name"]
    assert DATASETS[str(target["datasetUuid"])]["table_name"] == "incidents"
    # The same column in both datasets: one choice filters the incident's row and its members.
    assert column in _columns(_by_table("incidents")) and column in _columns(_by_table("anomalies"))
    assert by_name["Incident"]["scope"] == {"rootPath": ["ROOT_ID"], "excluded": []}


def test_the_mesh_overview_counts_incidents_not_anomaly_rows():
    charts = _charts_in_reading_order("mesh-overview")
    tables = {c["slice_name"]: DATASETS[str(c["dataset_uuid"])]["table_name"] for c in charts}
    assert "anomalies" not in tables.values(), tables
    counting = [c for c in charts if _open_only(c)]
    assert counting and all(tables[c["slice_name"]] == "incidents" for c in counting), tables
    assert any(c["params"].get("x_axis") == "root_kind" for c in counting), "open incidents by kind"
    attention = [c for c in charts if tables[c["slice_name"]] == "mesh_status" and c["params"].get("query_mode") == "raw"]
    assert attention and all("open_incidents" in _shown(c) for c in attention)


def _render(dataset, values: dict[str, list[str]]):
    """The dataset's SQL as Superset's Jinja renders it, with ``values`` as the dashboard's filter values."""
    import jinja2

    calls = []

    def filter_values(column, default=None, remove_filter=False):
        calls.append((column, remove_filter))
        return values.get(column, [])

    env = jinja2.Environment(undefined=jinja2.StrictUndefined)
    env.filters["where_in"] = lambda items: "(" + ", ".join("'" + v.replace("'", "''") + "'" for v in items) + ")"
    return env.from_string(dataset["sql"]).render(filter_values=filter_values), calls


@pytest.mark.parametrize("path", sorted(p for p in FILES if p.startswith("datasets/")))
def test_dataset_sql_renders(path):
    sql, _ = _render(FILES[path], {"site": ["CERN"], "source": ["a"], "destination": ["b"], "kind": ["loss_step"]})
    assert "{" not in sql and "%}" not in sql


def test_incidents_follow_the_source_destination_kind_and_site_filters_through_their_members():
    incidents = _by_table("incidents")
    sql, calls = _render(incidents, {})
    assert sql.split() == ["SELECT", "*", "FROM", "incidents"]
    # Superset must not also apply them as plain columns (the view has none of that name).
    assert {("source", True), ("destination", True), ("kind", True), ("site", True)} <= set(calls)
    sql, _ = _render(incidents, {"source": ["ps-a"], "kind": ["no_data"], "site": ["CERN"]})
    assert "incident_id IN (SELECT incident_id FROM anomalies_board WHERE" in " ".join(sql.split())
    for clause in ("source IN ('ps-a')", "kind IN ('no_data')", "source_site IN ('CERN')",
                   "destination_site IN ('CERN')"):
        assert clause in sql
    assert "destination IN" not in sql.replace("destination_site IN", "")
