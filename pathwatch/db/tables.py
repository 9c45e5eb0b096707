"""The tables the pipeline writes, for tools that empty them before a run (tests, benches).

>>> "hourly_latency" in PIPELINE_TABLES and "path_hourly" not in PIPELINE_TABLES
True
"""

# Measurements, anomalies and dead letters (the store job), and the hourly rollups their
# triggers maintain (sql/007); path_hourly and path_daily are views over the rollups.
PIPELINE_TABLES = ("throughput", "throughput_intervals", "latency", "trace", "trace_hops", "anomalies",
                   "dead_letters", "hourly_throughput", "hourly_latency", "hourly_trace")
