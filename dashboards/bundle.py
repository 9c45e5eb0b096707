"""The Superset asset bundle in ``dashboards/bundle/``: read it for import, write an export back.

The YAML files are what Superset's own export writes, with three changes that keep them
readable, free of secrets and the same on every install:

- a chart's ``query_context`` is a YAML mapping holding only its ``queries`` (Superset keeps a
  JSON string that also repeats the datasource and the chart's params; import adds them back);
- chart params carry no ``datasource``, ``dashboards`` or ``slice_id`` (ids of one install), and
  dashboards none of the label colours Superset's UI writes back while someone looks;
- the database's ``sqlalchemy_uri`` is a placeholder: import puts the stack's read-only DSN in.

In dashboards, ``chartId`` in ``position`` numbers the charts 1..n in the order they appear;
Superset maps them to its own ids on import through each chart's uuid.

>>> files = read_bundle()
>>> sorted({path.split("/")[0] for path in files})
['charts', 'dashboards', 'databases', 'datasets', 'metadata.yaml']
"""

from __future__ import annotations

import copy
import io
import json
import zipfile
from pathlib import Path
from typing import Any

import yaml

BUNDLE = Path(__file__).parent / "bundle"
ZIP_ROOT = "pathwatch_dashboards"  # Superset expects one top folder inside the zip
URI_PLACEHOLDER = "postgresql+psycopg2://pathwatch_ro:XXXXXXXXXX@timescaledb:5432/pathwatch"
MASK = "XXXXXXXXXX"  # how Superset writes a password it leaves out
_INSTALL_PARAMS = ("datasource", "dashboards", "slice_id")


class BundleError(ValueError):
    """A bundle file that cannot be read or does not hold what Superset needs."""


def read_bundle(folder: Path = BUNDLE) -> dict[str, dict[str, Any]]:
    """Every YAML file of the bundle, by its path relative to ``folder``."""
    files = {}
    for path in sorted(folder.rglob("*.yaml")):
        relative = path.relative_to(folder).as_posix()
        try:
            files[relative] = yaml.safe_load(path.read_text())
        except yaml.YAMLError as error:
            raise BundleError(f"{path}: not YAML: {error}") from None
        if not isinstance(files[relative], dict):
            raise BundleError(f"{path}: expected a mapping at the top")
    if "metadata.yaml" not in files:
        raise BundleError(f"{folder}: no metadata.yaml (is this a bundle folder?)")
    return files


class _PlainDumper(yaml.SafeDumper):
    """Writes a repeated value out again instead of as a YAML alias (``&id001`` / ``*id001``)."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def dump_yaml(data: dict[str, Any]) -> str:
    return yaml.dump(data, Dumper=_PlainDumper, sort_keys=False, allow_unicode=True, width=110)


def for_superset(files: dict[str, dict[str, Any]], database_uri: str) -> dict[str, str]:
    """The bundle as Superset imports it: the DSN filled in, each chart's query context complete.

    ``database_uri`` should carry the password as ``XXXXXXXXXX`` and the real one go in the
    import's ``passwords`` field, so that it is never written to a file.
    """
    out = {}
    for path, data in files.items():
        data = copy.deepcopy(data)
        if path.startswith("databases/"):
            data["sqlalchemy_uri"] = database_uri
        elif path.startswith("charts/"):
            data["query_context"] = json.dumps(_query_context(path, data))
        out[path] = dump_yaml(data)
    return out


def _query_context(path: str, chart: dict[str, Any]) -> dict[str, Any]:
    context = chart.get("query_context")
    if not isinstance(context, dict) or not isinstance(context.get("queries"), list):
        raise BundleError(f"{path}: query_context must be a mapping with a list of queries")
    return {"datasource": {"id": 0, "type": "table"}, "force": False, "queries": context["queries"],
            "form_data": chart["params"], "result_format": "json", "result_type": "full"}


def zip_bundle(files: dict[str, str]) -> bytes:
    """A zip with every file under one top folder, as ``POST /api/v1/assets/import/`` takes it."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path, text in files.items():
            archive.writestr(f"{ZIP_ROOT}/{path}", text)
    return buffer.getvalue()


def from_export(archive: bytes, database_uuids: set[str] | None = None) -> dict[str, dict[str, Any]]:
    """A Superset export zip turned back into the bundle's form (see the module docstring).

    Only the databases listed in ``database_uuids`` (default: all) and what hangs off them are kept,
    so that other people's charts in the same Superset do not leak into the repository.
    """
    files: dict[str, dict[str, Any]] = {}
    with zipfile.ZipFile(io.BytesIO(archive)) as handle:
        for name in handle.namelist():
            if not name.endswith(".yaml"):
                continue
            relative = name.split("/", 1)[1]
            files[relative] = yaml.safe_load(handle.read(name))
    keep_db = database_uuids if database_uuids is not None else {
        data["uuid"] for path, data in files.items() if path.startswith("databases/")}
    keep_ds = {data["uuid"] for path, data in files.items()
               if path.startswith("datasets/") and data.get("database_uuid") in keep_db}
    keep_charts = {data["uuid"] for path, data in files.items()
                   if path.startswith("charts/") and data.get("dataset_uuid") in keep_ds}
    out: dict[str, dict[str, Any]] = {}
    for path, data in files.items():
        if path == "metadata.yaml":
            out[path] = {"version": data["version"], "type": "assets", "timestamp": "2026-11-22T00:00:00+00:00"}
        elif path.startswith("databases/") and data["uuid"] in keep_db:
            out[path] = {**data, "sqlalchemy_uri": URI_PLACEHOLDER}
        elif path.startswith("datasets/") and data["uuid"] in keep_ds:
            out[path] = data
        elif path.startswith("charts/") and data["uuid"] in keep_charts:
            out[path] = _chart_from_export(data)
        elif path.startswith("dashboards/") and _chart_uuids(data) <= keep_charts and _chart_uuids(data):
            out[path] = _dashboard_from_export(data)
    return out


def _chart_from_export(chart: dict[str, Any]) -> dict[str, Any]:
    chart = dict(chart)
    chart["params"] = {k: v for k, v in (chart.get("params") or {}).items() if k not in _INSTALL_PARAMS}
    context = json.loads(chart["query_context"]) if chart.get("query_context") else {"queries": []}
    queries = [{k: v for k, v in query.items() if k != "datasource"} for query in context.get("queries", [])]
    chart["query_context"] = {"queries": queries}
    return chart


def _chart_uuids(dashboard: dict[str, Any]) -> set[str]:
    return {item["meta"]["uuid"] for item in (dashboard.get("position") or {}).values()
            if isinstance(item, dict) and item.get("type") == "CHART"}


def _dashboard_from_export(dashboard: dict[str, Any]) -> dict[str, Any]:
    """Chart ids renumbered 1..n in layout order, wherever the dashboard mentions them."""
    dashboard = copy.deepcopy(dashboard)
    position = dashboard["position"]
    renumber: dict[int, int] = {}
    for key in _layout_order(position):
        item = position[key]
        if item.get("type") == "CHART":
            renumber[item["meta"]["chartId"]] = item["meta"]["chartId"] = len(renumber) + 1
    metadata = dashboard.get("metadata", {})
    # Colours the browser assigned to series while someone looked (written back by Superset's UI).
    metadata.update(shared_label_colors=[], color_scheme_domain=[])
    metadata.pop("map_label_colors", None)
    for item in metadata.get("native_filter_configuration", []):
        if "chartsInScope" in item:
            item["chartsInScope"] = sorted(renumber.get(i, i) for i in item["chartsInScope"])
    return dashboard


def _layout_order(position: dict[str, Any]) -> list[str]:
    """Position keys depth-first from ROOT_ID, the order a person reads the dashboard in."""
    order, stack = [], ["ROOT_ID"]
    while stack:
        key = stack.pop()
        order.append(key)
        stack.extend(reversed(position.get(key, {}).get("children", []) if isinstance(position.get(key), dict) else []))
    return order


def write_bundle(files: dict[str, dict[str, Any]], folder: Path = BUNDLE) -> list[str]:
    """Write ``files`` into ``folder``, removing YAML files that are no longer in it; returns what changed."""
    changed = []
    existing = {p.relative_to(folder).as_posix() for p in folder.rglob("*.yaml")} if folder.exists() else set()
    for path, data in files.items():
        target = folder / path
        text = dump_yaml(data)
        if not target.exists() or target.read_text() != text:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
            changed.append(path)
    for path in sorted(existing - set(files)):
        (folder / path).unlink()
        changed.append(path)
    return changed


def order_like(exported: dict[str, dict[str, Any]], current: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Datasets' columns and metrics in the order the bundle's files have them, new ones after.

    Superset exports them in the order it created them, so a Superset that imported an older
    bundle lists a renamed or added column last; the order means nothing, so it is not a change.

    >>> old = {"datasets/d.yaml": {"columns": [{"column_name": "a"}, {"column_name": "b"}], "metrics": []}}
    >>> new = {"datasets/d.yaml": {"columns": [{"column_name": "c"}, {"column_name": "b"}, {"column_name": "a"}],
    ...                            "metrics": []}}
    >>> [c["column_name"] for c in order_like(new, old)["datasets/d.yaml"]["columns"]]
    ['a', 'b', 'c']
    """
    ordered = dict(exported)
    for path, data in exported.items():
        if not path.startswith("datasets/") or path not in current:
            continue
        data = dict(data)
        for field, name in (("columns", "column_name"), ("metrics", "metric_name")):
            rank = {item[name]: i for i, item in enumerate(current[path].get(field) or [])}
            data[field] = sorted(data.get(field) or [], key=lambda item: rank.get(item[name], len(rank)))
        ordered[path] = data
    return ordered


def differences(ours: dict[str, dict[str, Any]], theirs: dict[str, dict[str, Any]]) -> list[str]:
    """The bundle paths whose content differs (or that only one side has)."""
    return sorted(path for path in set(ours) | set(theirs) if ours.get(path) != theirs.get(path))
