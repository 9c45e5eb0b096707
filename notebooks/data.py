"""Reading the pipeline's database for notebooks: one place for the SQL, DataFrames out.

Every query goes through the read-only role (``pathwatch_ro``) on a read-only session. The DSN
comes from, in this order: the ``dsn`` argument, ``$PATHWATCH_DATABASE_URL_READONLY``, or the
local stack (``pathwatch stack status``: ``database_url_readonly``). Nothing is read at import.

>>> resolve_dsn("postgresql://ro@db/x", environ={})
'postgresql://ro@db/x'
>>> resolve_dsn(None, environ={"PATHWATCH_DATABASE_URL_READONLY": "postgresql://ro@h/db"})
'postgresql://ro@h/db'
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd
    import psycopg

DSN_ENV = "PATHWATCH_DATABASE_URL_READONLY"

# Measurement columns each series reads (units in the names, as in the record contract).
_SERIES_SQL = {
    "throughput": """
        SELECT time, id, succeeded, error, throughput_bps / 1e6 AS throughput_mbps, retransmits, rtt_ms,
               streams, tool
        FROM throughput
        WHERE source = %(source)s AND destination = %(destination)s AND time >= %(start)s AND time < %(end)s
        ORDER BY time""",
    "latency": """
        SELECT time, id, succeeded, error, delay_min_ms, delay_median_ms, delay_p95_ms, jitter_ms,
               packets_sent, packets_lost, 100 * loss_ratio AS loss_pct, clock_synchronized, max_clock_error_ms
        FROM latency
        WHERE source = %(source)s AND destination = %(destination)s AND time >= %(start)s AND time < %(end)s
        ORDER BY time""",
    "trace": """
        SELECT time, id, succeeded, tool, path_id, as_path_id, hop_count, reached, pmtu_bytes
        FROM trace
        WHERE source = %(source)s AND destination = %(destination)s AND time >= %(start)s AND time < %(end)s
        ORDER BY time""",
}

_ANOMALY_COLUMNS = ("id", "kind", "source", "destination", "start", "detected_at", "end_time", "severity", "score",
                    "summary", "evidence", "detector_version")


class NotebookError(RuntimeError):
    """Something the notebook's user has to fix (no DSN, unknown path or anomaly id)."""


# --- connecting ------------------------------------------------------------------------------

def resolve_dsn(dsn: str | None = None, environ: Mapping[str, str] | None = None) -> str:
    """The read-only DSN: the argument, else $PATHWATCH_DATABASE_URL_READONLY, else the local stack's."""
    if dsn:
        return dsn
    environ = os.environ if environ is None else environ
    if environ.get(DSN_ENV):
        return environ[DSN_ENV]
    from pathwatch import stack

    found = stack.status().database_url_readonly
    if not found:
        raise NotebookError(f"no read-only DSN: pass dsn=, set ${DSN_ENV}, or start the stack (pathwatch stack up)")
    return found


def connect(dsn: str | None = None) -> psycopg.Connection:
    """A read-only, autocommit connection as the read-only role (see :func:`resolve_dsn`)."""
    import psycopg

    # Belt and braces: the session itself is read-only, so even an owner DSN cannot write through it.
    return psycopg.connect(resolve_dsn(dsn), autocommit=True, options="-c default_transaction_read_only=on")


def columns(names: Sequence[str]) -> psycopg.sql.Composed:
    """A select list of quoted column names (psycopg.sql), to compose into a query.

    >>> columns(("id", "end_time")).as_string()
    '"id", "end_time"'
    """
    from psycopg import sql

    return sql.SQL(", ").join(map(sql.Identifier, names))


def frame(connection: psycopg.Connection, sql: str | psycopg.sql.Composable,
          params: Mapping[str, Any] | Sequence[Any] | None = None) -> pd.DataFrame:
    """Run one query (text, or composed with psycopg.sql); the rows as a DataFrame with its column names (times as UTC).

    Values always go in ``params``, never into the query's text.
    """
    import pandas as pd

    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        columns = [c.name for c in cursor.description]
        rows = cursor.fetchall()
    result = pd.DataFrame.from_records(rows, columns=columns)
    for column in result.columns:
        if rows and isinstance(rows[0][columns.index(column)], datetime):
            result[column] = pd.to_datetime(result[column], utc=True)
    return result


# --- paths and series --------------------------------------------------------------------------

def paths(connection: psycopg.Connection) -> pd.DataFrame:
    """Every directed path with data: runs per kind, first and last hour, anomalies (all and open)."""
    return frame(connection, """
        WITH runs AS (
            SELECT source, destination, sum(throughput_runs) AS throughput_runs, sum(latency_runs) AS latency_runs,
                   sum(trace_runs) AS trace_runs, min(bucket) AS first_hour, max(bucket) AS last_hour
            FROM path_hourly GROUP BY source, destination
        ), found AS (
            SELECT source, destination, count(*) AS anomalies, count(*) FILTER (WHERE end_time IS NULL) AS open_anomalies,
                   count(DISTINCT kind) AS anomaly_kinds
            FROM anomalies WHERE source IS NOT NULL AND destination IS NOT NULL GROUP BY source, destination
        )
        SELECT r.source, r.destination, r.throughput_runs, r.latency_runs, r.trace_runs, r.first_hour, r.last_hour,
               coalesce(f.anomalies, 0) AS anomalies, coalesce(f.open_anomalies, 0) AS open_anomalies,
               coalesce(f.anomaly_kinds, 0) AS anomaly_kinds
        FROM runs r LEFT JOIN found f USING (source, destination)
        ORDER BY r.source, r.destination""")


def most_eventful_path(table: pd.DataFrame) -> tuple[str, str]:
    """The path with the most kinds of anomaly, then the most anomalies, then by name (from :func:`paths`).

    >>> import pandas as pd
    >>> most_eventful_path(pd.DataFrame({"source": ["a", "b", "c"], "destination": ["b", "c", "a"],
    ...                                  "anomaly_kinds": [1, 2, 2], "anomalies": [5, 2, 3]}))
    ('c', 'a')
    """
    if table.empty:
        raise NotebookError("the database has no paths yet: stream some measurements first (pathwatch demo)")
    ranked = table.sort_values(["anomaly_kinds", "anomalies", "source", "destination"],
                               ascending=[False, False, True, True])
    first = ranked.iloc[0]
    return str(first["source"]), str(first["destination"])


def time_range(connection: psycopg.Connection, source: str, destination: str) -> tuple[datetime, datetime]:
    """First and last measurement time of a path (any kind)."""
    rows = connection.execute("""
        SELECT min(t), max(t) FROM (
            SELECT min(time) AS t FROM throughput WHERE source = %(s)s AND destination = %(d)s
            UNION ALL SELECT max(time) FROM throughput WHERE source = %(s)s AND destination = %(d)s
            UNION ALL SELECT min(time) FROM latency WHERE source = %(s)s AND destination = %(d)s
            UNION ALL SELECT max(time) FROM latency WHERE source = %(s)s AND destination = %(d)s
            UNION ALL SELECT min(time) FROM trace WHERE source = %(s)s AND destination = %(d)s
            UNION ALL SELECT max(time) FROM trace WHERE source = %(s)s AND destination = %(d)s) x""",
                              {"s": source, "d": destination}).fetchone()
    if rows[0] is None:
        raise NotebookError(f"no measurements for {source} → {destination}")
    return rows[0], rows[1]


def path_series(connection: psycopg.Connection, source: str, destination: str,
                start: datetime | None = None, end: datetime | None = None) -> dict[str, pd.DataFrame]:
    """The path's measurements in [start, end) (default: all of them): ``throughput``, ``latency``, ``trace``."""
    if start is None or end is None:
        first, last = time_range(connection, source, destination)
        start = start or first
        end = end or last + timedelta(microseconds=1)
    params = {"source": source, "destination": destination, "start": start, "end": end}
    return {kind: frame(connection, sql, params) for kind, sql in _SERIES_SQL.items()}


def anomalies(connection: psycopg.Connection, source: str | None = None, destination: str | None = None, *,
              kind: str | None = None, start: datetime | None = None, end: datetime | None = None) -> pd.DataFrame:
    """Anomaly episodes, optionally of one path or kind, overlapping [start, end); oldest first."""
    from psycopg import sql

    return frame(connection, sql.SQL("""
        SELECT {} FROM anomalies
        WHERE (%(source)s::text IS NULL OR source = %(source)s)
          AND (%(destination)s::text IS NULL OR destination = %(destination)s)
          AND (%(kind)s::text IS NULL OR kind = %(kind)s)
          AND (%(end)s::timestamptz IS NULL OR start < %(end)s)
          AND (%(start)s::timestamptz IS NULL OR coalesce(end_time, 'infinity') > %(start)s)
        ORDER BY start, kind, source, destination""").format(columns(_ANOMALY_COLUMNS)),
                 {"source": source, "destination": destination, "kind": kind, "start": start, "end": end})


def anomaly(connection: psycopg.Connection, anomaly_id: str) -> dict[str, Any]:
    """One anomaly episode as a dict (``evidence`` parsed); NotebookError when the id is unknown."""
    from psycopg import sql

    table = frame(connection, sql.SQL("SELECT {} FROM anomalies WHERE id = %(id)s").format(columns(_ANOMALY_COLUMNS)),
                  {"id": str(anomaly_id)})
    if table.empty:
        raise NotebookError(f"no anomaly with id {anomaly_id}")
    row = table.iloc[0].to_dict()
    row["id"] = str(row["id"])
    return row


# The order in which a person would want to look at anomalies: worst first, then the kinds that
# say most about a network (a route or a link), then the oldest.
_KIND_INTEREST = ("route_change", "mtu_blackhole", "rising_loss", "loss_step", "throughput_drop", "window_limited",
                  "diurnal_saturation", "latency_shift", "unreachable", "clock_error", "no_data")
_SEVERITY_RANK = {"critical": 4, "major": 3, "warning": 2, "info": 1}


def most_interesting_anomaly(table: pd.DataFrame) -> str:
    """The id of the anomaly to investigate first: highest severity, then kind (links before silences), then oldest.

    >>> import pandas as pd
    >>> most_interesting_anomaly(pd.DataFrame({"id": ["x", "y", "z"], "kind": ["no_data", "loss_step", "route_change"],
    ...     "severity": ["major", "major", "warning"], "start": [3, 2, 1]}))
    'y'
    """
    if table.empty:
        raise NotebookError("the database has no anomalies yet")
    ranked = table.assign(
        _severity=[-_SEVERITY_RANK.get(s, 0) for s in table["severity"]],
        _kind=[_KIND_INTEREST.index(k) if k in _KIND_INTEREST else len(_KIND_INTEREST) for k in table["kind"]],
    ).sort_values(["_severity", "_kind", "start"])
    return str(ranked.iloc[0]["id"])


# --- routes -----------------------------------------------------------------------------------

def route_history(connection: psycopg.Connection, source: str, destination: str,
                  start: datetime | None = None, end: datetime | None = None) -> pd.DataFrame:
    """The path's routes in [start, end) (default: all time), one row per ``path_id``, in order of first use.

    Columns: when it was first and last seen, how many traces took it (and their share), how many
    separate stretches of consecutive traces it had (ECMP alternation shows as many), its hop count
    and whether its traces reached the destination. :func:`route_stretches` gives the timeline.
    """
    return route_summary(route_traces(connection, source, destination, start, end))


def route_traces(connection: psycopg.Connection, source: str, destination: str,
                 start: datetime | None = None, end: datetime | None = None) -> pd.DataFrame:
    """The path's traces in [start, end): time, path_id, as_path_id, hop_count, reached; oldest first."""
    return frame(connection, """
        SELECT time, path_id, as_path_id, hop_count, reached FROM trace
        WHERE source = %(source)s AND destination = %(destination)s
          AND (%(start)s::timestamptz IS NULL OR time >= %(start)s)
          AND (%(end)s::timestamptz IS NULL OR time < %(end)s)
        ORDER BY time""", {"source": source, "destination": destination, "start": start, "end": end})


def route_summary(traces: pd.DataFrame) -> pd.DataFrame:
    """One row per route of time-ordered traces (pure; see :func:`route_history`).

    >>> import pandas as pd
    >>> t = pd.DataFrame({"time": [1, 2, 3, 4], "path_id": ["a", "a", "b", "a"], "as_path_id": [None] * 4,
    ...                   "hop_count": [5, 5, 6, 5], "reached": [True] * 4})
    >>> route_summary(t)[["path_id", "first_seen", "last_seen", "traces", "share", "stretches"]].values.tolist()
    [['a', 1, 4, 3, 0.75, 2], ['b', 3, 3, 1, 0.25, 1]]
    """
    import pandas as pd

    columns = ["path_id", "first_seen", "last_seen", "traces", "share", "stretches", "hop_count", "reached", "as_path_id"]
    if traces.empty:
        return pd.DataFrame(columns=columns)
    stretches = route_stretches(traces).groupby("path_id").size()
    grouped = traces.groupby("path_id", sort=False)
    table = pd.DataFrame({
        "first_seen": grouped["time"].min(), "last_seen": grouped["time"].max(), "traces": grouped.size(),
        "share": grouped.size() / len(traces), "stretches": stretches, "hop_count": grouped["hop_count"].max(),
        "reached": grouped["reached"].all(), "as_path_id": grouped["as_path_id"].first(),
    }).rename_axis("path_id").reset_index()
    return table.sort_values("first_seen", kind="stable").reset_index(drop=True)[columns]


def route_stretches(traces: pd.DataFrame) -> pd.DataFrame:
    """Consecutive traces on the same ``path_id`` folded into one row each (pure; input sorted by time).

    >>> import pandas as pd
    >>> t = pd.DataFrame({"time": [1, 2, 3, 4], "path_id": ["a", "a", "b", "a"], "as_path_id": [None] * 4,
    ...                   "hop_count": [5, 5, 6, 5], "reached": [True] * 4})
    >>> route_stretches(t)[["path_id", "first_seen", "last_seen", "traces"]].values.tolist()
    [['a', 1, 2, 2], ['b', 3, 3, 1], ['a', 4, 4, 1]]
    """
    import pandas as pd

    columns = ["path_id", "first_seen", "last_seen", "traces", "hop_count", "reached", "as_path_id"]
    if traces.empty:
        return pd.DataFrame(columns=columns)
    stretch = (traces["path_id"] != traces["path_id"].shift()).cumsum()
    grouped = traces.groupby(stretch, sort=True)
    return pd.DataFrame({
        "path_id": grouped["path_id"].first(), "first_seen": grouped["time"].first(),
        "last_seen": grouped["time"].last(), "traces": grouped.size(), "hop_count": grouped["hop_count"].max(),
        "reached": grouped["reached"].all(), "as_path_id": grouped["as_path_id"].first(),
    }).reset_index(drop=True)[columns]


def hops(connection: psycopg.Connection, path_ids: Sequence[str]) -> pd.DataFrame:
    """The hops of each listed route (``trace_hops``): path_id, ttl, ip, hostname, asn, mtu."""
    return frame(connection, """
        SELECT path_id, ttl, ip, hostname, asn, mtu FROM trace_hops
        WHERE path_id = ANY(%(ids)s) ORDER BY path_id, ttl""", {"ids": list(path_ids)})


def hop_table(hop_rows: pd.DataFrame, order: Sequence[str] | None = None) -> pd.DataFrame:
    """Routes side by side: one row per TTL, one column per route (its answering address, ``*`` for silence).

    >>> import pandas as pd
    >>> rows = pd.DataFrame({"path_id": ["a", "a", "b", "b"], "ttl": [1, 2, 1, 2], "ip": ["10.0.0.1", None, "10.0.0.1", "10.9.9.9"]})
    >>> hop_table(rows, order=["b", "a"]).values.tolist()
    [['10.0.0.1', '10.0.0.1'], ['10.9.9.9', '*']]
    """
    import pandas as pd

    if hop_rows.empty:
        return pd.DataFrame()
    table = hop_rows.assign(ip=hop_rows["ip"].fillna("*")).pivot(index="ttl", columns="path_id", values="ip")
    table = table[[p for p in (order or table.columns) if p in table.columns]]
    table.columns.name = "route"
    return table.fillna("")


def paths_sharing_hops(connection: psycopg.Connection, source: str, destination: str,
                       start: datetime, end: datetime) -> pd.DataFrame:
    """Other paths whose traces in [start, end) crossed an address this path's traces crossed then.

    One row per other path: how many addresses they share (and which), and the anomalies that
    path had in the window — several paths through one hop going bad together point at a link.
    """
    return frame(connection, """
        WITH ours AS (
            SELECT DISTINCT h.ip FROM trace t JOIN trace_hops h USING (path_id)
            WHERE t.source = %(source)s AND t.destination = %(destination)s
              AND t.time >= %(start)s AND t.time < %(end)s AND h.ip IS NOT NULL
        ), theirs AS (
            SELECT DISTINCT t.source, t.destination, h.ip FROM trace t JOIN trace_hops h USING (path_id)
            WHERE t.time >= %(start)s AND t.time < %(end)s AND h.ip IN (SELECT ip FROM ours)
              AND NOT (t.source = %(source)s AND t.destination = %(destination)s)
        )
        SELECT x.source, x.destination, count(*) AS shared_hops, string_agg(x.ip, ', ' ORDER BY x.ip) AS shared_ips,
               (SELECT count(*) FROM anomalies a WHERE a.source = x.source AND a.destination = x.destination
                  AND a.start < %(end)s AND coalesce(a.end_time, 'infinity') > %(start)s) AS anomalies_in_window,
               (SELECT string_agg(DISTINCT a.kind, ', ') FROM anomalies a
                 WHERE a.source = x.source AND a.destination = x.destination
                   AND a.start < %(end)s AND coalesce(a.end_time, 'infinity') > %(start)s) AS kinds_in_window
        FROM theirs x GROUP BY x.source, x.destination
        ORDER BY shared_hops DESC, x.source, x.destination""",
                 {"source": source, "destination": destination, "start": start, "end": end})


# --- one anomaly, everything around it ------------------------------------------------------------

def anomaly_window(row: Mapping[str, Any], margin: timedelta, data_end: datetime | None = None) -> tuple[datetime, datetime]:
    """[start - margin, end + margin): an open episode ends at the data's end (or its detection).

    >>> from datetime import datetime, timedelta, timezone
    >>> t = datetime(2024, 1, 1, tzinfo=timezone.utc)
    >>> lo, hi = anomaly_window({"start": t, "end_time": None, "detected_at": t + timedelta(hours=1)}, timedelta(hours=2))
    >>> (hi - lo) / timedelta(hours=1)
    5.0
    """
    import pandas as pd

    def bare(value):
        return None if value is None or pd.isna(value) else pd.Timestamp(value).to_pydatetime()

    end = bare(row.get("end_time")) or bare(data_end) or bare(row["detected_at"])
    return bare(row["start"]) - margin, max(end, bare(row["detected_at"])) + margin


def anomaly_context(connection: psycopg.Connection, anomaly_id: str, margin: timedelta = timedelta(days=1)) -> dict[str, Any]:
    """Everything about one anomaly: the episode, the window, its path's series and routes, neighbours sharing hops."""
    row = anomaly(connection, anomaly_id)
    source, destination = row["source"], row["destination"]
    if source is None or destination is None:
        raise NotebookError(f"anomaly {anomaly_id} names no path (source/destination missing)")
    _, data_end = time_range(connection, source, destination)
    start, end = anomaly_window(row, margin, data_end)
    return {
        "anomaly": row, "start": start, "end": end,
        "series": path_series(connection, source, destination, start, end),
        "anomalies": anomalies(connection, source, destination, start=start, end=end),
        "routes": route_history(connection, source, destination, start, end),
        "neighbours": paths_sharing_hops(connection, source, destination, start, end),
        "mesh_anomalies": anomalies(connection, start=start, end=end),
    }


def suspect_hops(neighbours: pd.DataFrame) -> list[str]:
    """Addresses shared with *every* neighbouring path that had an anomaly in the window (pure).

    Empty when no neighbour had one: then nothing points at a shared link.

    >>> import pandas as pd
    >>> n = pd.DataFrame({"shared_ips": ["10.0.0.1, 10.0.0.2", "10.0.0.2, 10.0.0.3", "10.0.0.9"],
    ...                   "anomalies_in_window": [1, 2, 0]})
    >>> suspect_hops(n)
    ['10.0.0.2']
    """
    hit = neighbours[neighbours["anomalies_in_window"] > 0] if not neighbours.empty else neighbours
    if hit.empty:
        return []
    sets = [set(ips.split(", ")) for ips in hit["shared_ips"]]
    return sorted(set.intersection(*sets))


def hop_suspicion(neighbours: pd.DataFrame) -> pd.DataFrame:
    """Per shared address: how many neighbouring paths through it had anomalies in the window, and how many not (pure).

    Sorted by the share of troubled paths, then their number: an address that only troubled
    paths cross is the first place to look for a bad link.

    >>> import pandas as pd
    >>> n = pd.DataFrame({"shared_ips": ["10.0.0.1, 10.0.0.2", "10.0.0.2", "10.0.0.1"], "anomalies_in_window": [1, 2, 0]})
    >>> hop_suspicion(n).values.tolist()
    [['10.0.0.2', 2, 0, 1.0], ['10.0.0.1', 1, 1, 0.5]]
    """
    import pandas as pd

    columns = ["ip", "troubled_paths", "healthy_paths", "troubled_share"]
    counts: dict[str, list[int]] = {}
    for ips, found in zip(neighbours.get("shared_ips", []), neighbours.get("anomalies_in_window", [])):
        for ip in ips.split(", "):
            counts.setdefault(ip, [0, 0])[0 if found > 0 else 1] += 1
    table = pd.DataFrame([(ip, t, h, t / (t + h)) for ip, (t, h) in counts.items()], columns=columns)
    return table.sort_values(["troubled_share", "troubled_paths", "ip"], ascending=[False, False, True]).reset_index(drop=True)
