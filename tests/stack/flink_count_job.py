"""A trivial PyFlink job for the stack tests: read JSON rows from a Kafka topic, sum per key.

Usage: flink run --python tests/stack/flink_count_job.py HOME BOOTSTRAP TOPIC (Flink's client,
attached, so it runs in the stack's session cluster and this program collects the result).
Prints one JSON object {key: [count, doubled_sum]} on stdout. It runs in thread mode with a
Python UDF (so the TaskManager's embedded interpreter is used), reads the topic from the start
to the offsets at job start (bounded), is called 'stack-test-count' in the cluster, and takes
its settings from pathwatch.stack.flink like the pipeline's jobs.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from pathwatch.stack import flink
from pathwatch.stack.config import resolve


def main(home: str, bootstrap: str, topic: str) -> None:
    config = resolve(home=home)

    from pyflink.common import Configuration
    from pyflink.table import DataTypes, EnvironmentSettings, TableEnvironment
    from pyflink.table.udf import udf

    settings = Configuration()
    for key, value in flink.job_configuration(config).items():
        settings.set_string(key, value)
    settings.set_string("parallelism.default", "1")
    settings.set_string("pipeline.name", "stack-test-count")
    tables = TableEnvironment.create(
        EnvironmentSettings.new_instance().in_batch_mode().with_configuration(settings).build())

    @udf(result_type=DataTypes.BIGINT())
    def doubled(value: int) -> int:
        return value * 2

    tables.create_temporary_function("doubled", doubled)
    tables.execute_sql(f"""
        CREATE TABLE measurements (k STRING, v BIGINT) WITH (
          'connector' = 'kafka',
          'topic' = '{topic}',
          'properties.bootstrap.servers' = '{bootstrap}',
          'properties.group.id' = 'pathwatch-stack-test',
          'scan.startup.mode' = 'earliest-offset',
          'scan.bounded.mode' = 'latest-offset',
          'format' = 'json'
        )""")
    result = tables.execute_sql("SELECT k, COUNT(*), SUM(doubled(v)) FROM measurements GROUP BY k")
    with result.collect() as rows:
        counts = {row[0]: [row[1], row[2]] for row in rows}
    sys.stdout.write(json.dumps(counts) + "\n")


if __name__ == "__main__":
    main(*sys.argv[1:4])
