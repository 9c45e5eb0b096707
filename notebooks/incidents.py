"""Incidents for the notebooks: one problem, one row; its member anomalies on demand.

Every anomaly carries ``incident_id``, the id of the root anomaly of its problem (its own id
when it stands alone; :class:`pathwatch.models.anomaly.Anomaly` ``.incident``). In the database
the ``incidents`` view (sql/006) has one row per incident and ``anomalies_board`` each anomaly
with its incident; the queries here read them (read-only, like :mod:`pathwatch.notebooks.data`).
:func:`incident_table` groups anomalies the same way without a database: the ``Anomaly`` objects
a replay returns (:func:`pathwatch.notebooks.backtest.run_once`), or a DataFrame of anomaly rows.

The root is the member whose id is the incident's; while that one is missing (not stored yet,
or regrouped since) the earliest member stands in, as in the view ``incident_roots``.

>>> from pathwatch.models.anomaly import Anomaly
>>> def make(kind, src, dst, start):
...     return Anomaly.open(kind, src, dst, start=start, detected_at=start, severity="warning", score=0.5,
...                         summary=kind, evidence={})
>>> route = make("route_change", "a", "b", 0.0)
>>> shift = make("latency_shift", "a", "b", 600.0).in_incident(route.id)
>>> table = incident_table([shift, route, make("loss_step", "c", "d", 60.0)])
>>> table[["root_kind", "member_count", "member_kinds", "paths", "is_open"]].values.tolist()
[['route_change', 2, 'latency_shift, route_change', 'a>b', True], ['loss_step', 1, 'loss_step', 'c>d', True]]
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from pathwatch.notebooks.data import NotebookError, columns, frame

if TYPE_CHECKING:
    import pandas as pd
    import psycopg

INCIDENT_COLUMNS = ("incident_id", "incident", "root_id", "root_kind", "root_summary", "root_path", "location",
                    "location_scope", "location_paths_sharing", "paths", "path_count", "hosts", "start", "detected_at",
                    "end_time", "is_open", "duration_h", "severity", "member_count", "member_kinds", "ticket")
MEMBER_COLUMNS = ("id", "incident_id", "is_root", "kind", "source", "destination", "start", "detected_at", "end_time",
                  "severity", "summary", "incident")
TABLE_COLUMNS = ["incident_id", "root_id", "root_kind", "root_summary", "start", "end_time", "is_open", "severity",
                 "member_count", "member_kinds", "paths", "path_count"]
_SEVERITY_RANK = {"critical": 4, "major": 3, "warning": 2, "info": 1}


def incidents(connection: psycopg.Connection, source: str | None = None, destination: str | None = None, *,
              start: datetime | None = None, end: datetime | None = None) -> pd.DataFrame:
    """Incidents with a member on the path (when given) whose window overlaps [start, end); oldest first.

    One row per incident (view ``incidents``): the root's kind, summary and location, the members'
    paths and hosts, start, end (None while a member is open), worst severity, members, ticket.
    """
    from psycopg import sql

    return frame(connection, sql.SQL("""
        SELECT {} FROM incidents
        WHERE incident_id IN (
            SELECT incident_id FROM anomalies
            WHERE (%(source)s::text IS NULL OR source = %(source)s)
              AND (%(destination)s::text IS NULL OR destination = %(destination)s)
              AND (%(end)s::timestamptz IS NULL OR start < %(end)s)
              AND (%(start)s::timestamptz IS NULL OR coalesce(end_time, 'infinity') > %(start)s))
        ORDER BY start, incident_id""").format(columns(INCIDENT_COLUMNS)),
                 {"source": source, "destination": destination, "start": start, "end": end})


def incident(connection: psycopg.Connection, incident_id: str) -> dict[str, Any]:
    """One incident's row as a dict; NotebookError when no anomaly belongs to it."""
    from psycopg import sql

    table = frame(connection, sql.SQL("SELECT {} FROM incidents WHERE incident_id = %(id)s").format(
        columns(INCIDENT_COLUMNS)), {"id": str(incident_id)})
    if table.empty:
        raise NotebookError(f"no incident with id {incident_id}")
    row = table.iloc[0].to_dict()
    row["incident_id"], row["root_id"] = str(row["incident_id"]), str(row["root_id"])
    return row


def incident_of(connection: psycopg.Connection, anomaly_id: str) -> dict[str, Any]:
    """The incident an anomaly belongs to (see :func:`incident`); NotebookError when the anomaly is unknown."""
    found = connection.execute("SELECT incident_id FROM anomalies WHERE id = %(id)s", {"id": str(anomaly_id)}).fetchone()
    if found is None:
        raise NotebookError(f"no anomaly with id {anomaly_id}")
    return incident(connection, str(found[0]))


def members(connection: psycopg.Connection, incident_id: str) -> pd.DataFrame:
    """The anomalies of one incident, root first, then by start (``is_root`` marks the root)."""
    from psycopg import sql

    return frame(connection, sql.SQL("""
        SELECT {} FROM anomalies_board WHERE incident_id = %(id)s
        ORDER BY is_root DESC, start, id""").format(columns(MEMBER_COLUMNS)), {"id": str(incident_id)})


def anomalies_with_incidents(connection: psycopg.Connection, source: str | None = None,
                             destination: str | None = None, *, start: datetime | None = None,
                             end: datetime | None = None) -> pd.DataFrame:
    """Anomalies (of one path, when given) overlapping [start, end), each with its incident; grouped by incident.

    Incidents in order of their first member, each one's root first.
    """
    from psycopg import sql

    return frame(connection, sql.SQL("""
        SELECT {} FROM anomalies_board
        WHERE (%(source)s::text IS NULL OR source = %(source)s)
          AND (%(destination)s::text IS NULL OR destination = %(destination)s)
          AND (%(end)s::timestamptz IS NULL OR start < %(end)s)
          AND (%(start)s::timestamptz IS NULL OR coalesce(end_time, 'infinity') > %(start)s)
        ORDER BY min(start) OVER (PARTITION BY incident_id), incident_id, is_root DESC, start, id""").format(
        columns(MEMBER_COLUMNS)), {"source": source, "destination": destination, "start": start, "end": end})


def incident_table(anomalies: Iterable[Any] | pd.DataFrame) -> pd.DataFrame:
    """One row per incident of ``anomalies`` (pure), in order of their first member's start.

    ``anomalies``: :class:`~pathwatch.models.anomaly.Anomaly` objects (a replay's states: the last
    one of each id counts), or a DataFrame with ``id``, ``incident_id``, ``kind``, ``source``,
    ``destination``, ``start``, ``end_time``, ``severity`` (and ``summary``). Columns:
    :data:`TABLE_COLUMNS`; ``end_time`` is missing (NaT) while any member is open.
    """
    import pandas as pd

    rows = _rows(anomalies)
    if rows.empty:
        return pd.DataFrame(columns=TABLE_COLUMNS)
    rows = rows.assign(
        _own=rows["id"] != rows["incident_id"],
        _rank=[-_SEVERITY_RANK.get(s, 0) for s in rows["severity"]],
        _path=[f"{s}>{d}" if s is not None and d is not None else None
               for s, d in zip(rows["source"], rows["destination"])],
    )
    out = []
    for incident_id, group in rows.groupby("incident_id", sort=False):
        root = group.sort_values(["_own", "start", "id"]).iloc[0]
        is_open = bool(group["end_time"].isna().any())
        paths = sorted({p for p in group["_path"] if p is not None})
        out.append({
            "incident_id": incident_id, "root_id": root["id"], "root_kind": root["kind"],
            "root_summary": root.get("summary"), "start": group["start"].min(),
            "end_time": None if is_open else group["end_time"].max(), "is_open": is_open,
            "severity": group.sort_values(["_rank", "start", "id"]).iloc[0]["severity"],
            "member_count": len(group), "member_kinds": ", ".join(sorted(set(group["kind"]))),
            "paths": ", ".join(paths), "path_count": len(paths),
        })
    return pd.DataFrame(out, columns=TABLE_COLUMNS).sort_values(["start", "incident_id"], kind="stable") \
        .reset_index(drop=True)


def _rows(anomalies: Iterable[Any] | pd.DataFrame) -> pd.DataFrame:
    """Anomaly rows as a DataFrame: the last state of each id, ``incident_id`` filled (own id when missing)."""
    import pandas as pd

    if isinstance(anomalies, pd.DataFrame):
        rows = anomalies.copy()
        if "end_time" not in rows.columns and "end" in rows.columns:
            rows = rows.rename(columns={"end": "end_time"})
    else:
        latest: dict[str, Any] = {}
        for anomaly in anomalies:
            latest[anomaly.id] = anomaly  # a replay lists every state; the last one is the episode
        rows = pd.DataFrame([{"id": a.id, "incident_id": a.incident, "kind": a.kind, "source": a.source,
                              "destination": a.destination, "start": a.start, "end_time": a.end,
                              "severity": a.severity, "summary": a.summary} for a in latest.values()],
                            columns=["id", "incident_id", "kind", "source", "destination", "start", "end_time",
                                     "severity", "summary"])
        for column in ("start", "end_time"):  # epoch seconds, as the detectors keep them
            rows[column] = pd.to_datetime(rows[column], unit="s", utc=True)
    for column in ("id", "incident_id"):
        if column in rows.columns:
            rows[column] = [None if v is None or (isinstance(v, float) and v != v) else str(v) for v in rows[column]]
    if "incident_id" not in rows.columns:
        rows["incident_id"] = rows["id"]
    rows["incident_id"] = rows["incident_id"].where(rows["incident_id"].notna() & (rows["incident_id"] != ""),
                                                    rows["id"])
    if "summary" not in rows.columns:
        rows["summary"] = None
    return rows
