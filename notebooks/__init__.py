"""Helpers for the notebooks (``pathwatch.notebooks``): database access, backtests, figures.

Importing is cheap (pandas, matplotlib and psycopg load on first use). In a notebook::

    from pathwatch import notebooks as helpers
    db = helpers.connect()                       # read-only role; DSN from env or the stack
    src, dst = helpers.most_eventful_path(helpers.paths(db))
    series = helpers.path_series(db, src, dst)   # {"throughput", "latency", "trace"} DataFrames
    helpers.plot_path(series, helpers.anomalies(db, src, dst))
    helpers.vetoed_table(records, source=src, destination=dst)   # why a change did not alarm
"""

from pathwatch.notebooks.data import (
    DSN_ENV,
    NotebookError,
    anomalies,
    anomaly,
    anomaly_context,
    anomaly_window,
    connect,
    frame,
    hop_suspicion,
    hop_table,
    hops,
    most_eventful_path,
    most_interesting_anomaly,
    path_series,
    paths,
    paths_sharing_hops,
    resolve_dsn,
    route_history,
    route_stretches,
    route_summary,
    route_traces,
    suspect_hops,
    time_range,
)
from pathwatch.notebooks.backtest import vetoed_table
from pathwatch.notebooks.plots import anomaly_spans, plot_confusion, plot_path, plot_tradeoff

__all__ = [
    "DSN_ENV", "NotebookError", "anomalies", "anomaly", "anomaly_context", "anomaly_window", "anomaly_spans", "connect",
    "frame", "hop_suspicion", "hop_table", "hops", "most_eventful_path", "most_interesting_anomaly", "path_series", "paths",
    "paths_sharing_hops", "plot_confusion", "plot_path", "plot_tradeoff", "resolve_dsn", "route_history",
    "route_stretches", "route_summary", "route_traces", "suspect_hops", "time_range", "vetoed_table",
]
