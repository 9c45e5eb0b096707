"""The tables the pipeline writes, for tools that empty them before a run (tests, benches).

>>> "hourly_latency" in PIPELINE_TABLES and "path_hourly" not in PIPELINE_TABLES
True
"""

# Measurements, routes, anomalies and dead letters (the store job), and what the database's
# triggers write from them: each route's hops (sql/008) and the hourly rollups (sql/007;
# path_hourly and path_daily are views over them).
PIPELINE_TABLES = ("throughput", "throughput_intervals", "latency", "trace", "trace_paths", "trace_hops",
                   "anomalies", "dead_letters", "hourly_throughput", "hourly_latency", "hourly_trace")
