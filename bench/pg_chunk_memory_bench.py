"""PostgreSQL backend memory per hypertable chunk: what the soak's PostgreSQL growth is made of.

The soak (soak_bench.py) replays 68 days of a mesh in 30 minutes, so TimescaleDB opens a new
weekly chunk of each measurement table every ~3 minutes instead of every week, and every
backend that writes into a chunk caches its catalog entries. This bench measures one backend's
own memory (PSS without shared memory, as the soak does) on the test stack's database: after
rows into ten new weekly chunks of ``latency`` (through its rollup trigger), then after rows
into those same chunks, round after round. Steady state is what a long-running writer does
between chunk creations. The test rows (a source of its own, in the year 2031) are deleted and
their chunks dropped at the end. Needs the test stack up (`.pathwatch/test-stack`) and root
(to read the backend's /proc/PID/smaps_rollup).

Writes bench/results/pg_chunk_memory.json. Usage: python bench/pg_chunk_memory_bench.py
"""

from __future__ import annotations

import json
import sys
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
SOURCE, DESTINATION, EPOCH = "memtest-a", "memtest-b", "2031-01-01"
INSERT = """INSERT INTO latency (time, id, source, destination, format, tool, one_way, succeeded, delay_min_ms,
    packets_sent, packets_lost)
    VALUES (%s::timestamptz + %s * interval '1 day' + %s * interval '1 second', %s, %s, %s, 'owping', 'owping',
            true, true, 1.0, 600, 0) ON CONFLICT (id, time) DO NOTHING"""


def main() -> None:
    import psycopg

    from bench.stack_env import prepared_home
    from pathwatch.stack.config import resolve
    from pathwatch.streaming.settings import from_stack
    from tests.faults.soak import resources

    url = from_stack(resolve(home=prepared_home())).database_url
    steps = []
    with psycopg.connect(url, autocommit=True) as connection:
        pid = connection.execute("SELECT pg_backend_pid()").fetchone()[0]

        def chunks() -> int:
            return connection.execute("SELECT count(*) FROM timescaledb_information.chunks "
                                      "WHERE hypertable_name = 'latency'").fetchone()[0]

        def insert(day: int, rows: int, first_second: int = 0) -> None:
            with connection.transaction():
                for second in range(first_second, first_second + rows):
                    connection.execute(INSERT, [EPOCH, day, second, uuid.uuid4(), SOURCE, DESTINATION])

        def step(what: str, rows: int) -> None:
            steps.append({"step": what, "rows": rows, "own_kb": resources([pid])["own_kb"], "latency_chunks": chunks()})
            print(json.dumps(steps[-1]), flush=True)

        try:
            insert(0, 200)
            step("rows into one new chunk (warm-up)", 200)
            for week in range(1, 11):
                insert(7 * week, 200)
            step("rows into ten more new weekly chunks", 2000)
            for round_ in range(5):
                for week in range(11):  # the same days, later seconds: the same chunks and hours
                    insert(7 * week, 1000, first_second=200 + 1000 * round_)
                step(f"rows into the same chunks, round {round_ + 1}", 11000)
        finally:
            connection.execute("DELETE FROM latency WHERE source = %s", [SOURCE])
            connection.execute("DELETE FROM hourly_latency WHERE source = %s", [SOURCE])
            for table in ("latency", "hourly_latency"):
                connection.execute("SELECT drop_chunks(%s, newer_than => %s::timestamptz)", [table, "2030-12-01"])
    new_chunks = steps[1]["latency_chunks"] - steps[0]["latency_chunks"]
    out = {
        "what": "one PostgreSQL backend's own memory (PSS without shared memory) as it writes latency rows",
        "steps": steps,
        "kb_per_new_chunk": round((steps[1]["own_kb"] - steps[0]["own_kb"]) / max(new_chunks, 1), 1),
        "kb_over_the_last_three_rounds_into_known_chunks": steps[-1]["own_kb"] - steps[-4]["own_kb"],
    }
    path = REPO / "bench" / "results" / "pg_chunk_memory.json"
    path.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
