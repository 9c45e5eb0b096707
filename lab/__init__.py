"""Helpers for the notebooks (``pathwatch.lab``): database access, backtests, figures.

Importing is cheap (pandas, matplotlib and psycopg load on first use). In a notebook::

    from pathwatch import lab
    db = lab.connect()                       # read-only role; DSN from env or the stack
    src, dst = lab.most_eventful_path(lab.paths(db))
    series = lab.path_series(db, src, dst)   # {"throughput", "latency", "trace"} DataFrames
    lab.plot_path(series, lab.anomalies(db, src, dst))
"""

from pathwatch.lab.data import (
    DSN_ENV,
    LabError,
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
from pathwatch.lab.plots import anomaly_spans, plot_confusion, plot_path, plot_tradeoff

__all__ = [
    "DSN_ENV", "LabError", "anomalies", "anomaly", "anomaly_context", "anomaly_window", "anomaly_spans", "connect",
    "frame", "hop_suspicion", "hop_table", "hops", "most_eventful_path", "most_interesting_anomaly", "path_series", "paths",
    "paths_sharing_hops", "plot_confusion", "plot_path", "plot_tradeoff", "resolve_dsn", "route_history",
    "route_stretches", "route_summary", "route_traces", "suspect_hops", "time_range",
]
