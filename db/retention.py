"""Retention: drop hypertable chunks older than each table's keep period.

On the Apache-licensed TimescaleDB (what the local stack runs) pathwatch drops chunks itself
(``drop_chunks``, run by ``pathwatch db retention`` from cron or the demo); on a licensed
(TSL) TimescaleDB it can install TimescaleDB's own retention policies instead
(``--policies``), which then run inside the database.
"""

from __future__ import annotations

from dataclasses import dataclass

# Keep periods in days per hypertable: raw measurements shorter than their rollups (the hourly
# tables that path_hourly and path_daily read; sql/007).
DEFAULT_KEEP_DAYS = {
    "throughput": 180, "throughput_intervals": 30, "latency": 180, "trace": 180,
    "hourly_throughput": 3650, "hourly_latency": 3650, "hourly_trace": 3650,
}


@dataclass(frozen=True)
class Outcome:
    table: str
    keep_days: int
    dropped_chunks: int
    policy: bool


def apply_retention(url: str, keep_days: dict[str, int] | None = None, policies: bool = False) -> list[Outcome]:
    """Drop old chunks now (or, with ``policies``, install TimescaleDB retention policies)."""
    import psycopg

    keep = {**DEFAULT_KEEP_DAYS, **(keep_days or {})}
    out: list[Outcome] = []
    with psycopg.connect(url, autocommit=True, connect_timeout=10) as connection:
        license_ = connection.execute("SHOW timescaledb.license").fetchone()[0]
        if policies and license_ != "timescale":
            raise RuntimeError(f"retention policies need the licensed TimescaleDB (this one is {license_!r}); "
                               "run `pathwatch db retention` without --policies to drop chunks directly")
        for table, days in keep.items():
            interval = f"{int(days)} days"
            if policies:
                connection.execute("SELECT add_retention_policy(%s, %s::interval, if_not_exists => true)",
                                   [table, interval])
                out.append(Outcome(table, days, 0, True))
            else:
                rows = connection.execute("SELECT drop_chunks(%s, older_than => %s::interval)", [table, interval]).fetchall()
                out.append(Outcome(table, days, len(rows), False))
    return out
