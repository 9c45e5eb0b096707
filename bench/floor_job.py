"""The floor bench's Flink jobs: the pipeline's shape, stage by stage, and the bare hops beneath it.

Submitted by ``bench/floor_bench.py`` through Flink's client (``flink run --detached --python
<this file> SETTINGS_FILE SHAPE NAME``), each reading its input topic with a consumer group of
its own (``pathwatch-NAME``) and writing topics of its own exactly once (Kafka transactions
committed on checkpoints, as the normalise job writes records). Shapes:

- ``sql_copy``: Flink SQL only, the raw message copied to the output topic (no Python);
- ``python_copy``: the normalise job's graph with the parse left out: the same Kafka table, the
  same table → stream → Python flat map (thread mode) → table conversions, the same sink; the
  flat map passes the message on unchanged;
- ``normalise``, ``detect``, ``store``: the pipeline's jobs themselves (``streaming/*_job.py``),
  each under a job name of its own so its checkpoints and consumer group never mix with the
  pipeline's; detect and store read the records the normalise shape wrote.
"""

from __future__ import annotations

import sys

SHAPES = ("sql_copy", "python_copy", "normalise", "detect", "store")


def _pass_on_function():
    import time

    from pyflink.common import Row
    from pyflink.datastream import FlatMapFunction

    class PassOn(FlatMapFunction):
        """What the normalise job's flat map does around the parse: bytes in, one keyed row out."""

        def flat_map(self, row):
            yield Row("record", None, bytes(row[0]).decode(), int(time.time() * 1000))

    return PassOn


def build(settings, shape: str, name: str):
    """The shape's statement set (not yet executed), the job called ``name``."""
    from pathwatch.streaming import normalise_job

    if shape == "normalise":
        return normalise_job.build(settings, job=name)
    if shape == "detect":
        from pathwatch.streaming import detect_job

        return detect_job.build(settings, job=name)
    if shape == "store":
        from pathwatch.streaming import store_job

        return store_job.build(settings, job=name)
    if shape == "python_copy":
        return normalise_job.build(settings, job=name, function=_pass_on_function()())
    if shape != "sql_copy":
        raise SystemExit(f"floor job: unknown shape {shape!r}; one of {', '.join(SHAPES)}")
    from pathwatch.streaming.flink_env import environments
    from pathwatch.streaming.kafka_tables import kafka_options, keyed_raw_sink

    env, tables = environments(settings, name)
    tables.execute_sql(f"""CREATE TABLE raw_in (
      body STRING, kt TIMESTAMP_LTZ(3) METADATA FROM 'timestamp' VIRTUAL
    ) WITH ({kafka_options(settings.topics['raw'], settings.bootstrap, 'pathwatch-' + name,
                           settings.kafka_properties, format='raw')})""")
    tables.execute_sql(keyed_raw_sink("copied", settings.topics["records"], settings, f"pathwatch-{name}"))
    statements = tables.create_statement_set()
    statements.add_insert_sql("INSERT INTO copied SELECT CAST(NULL AS STRING), body, kt FROM raw_in")
    return statements


def main(argv: list[str]) -> None:
    import json

    from pathwatch.streaming.settings import read_file

    if len(argv) != 3 or argv[1] not in SHAPES:
        raise SystemExit(f"floor job: expected SETTINGS_FILE SHAPE NAME (SHAPE one of {', '.join(SHAPES)}); got {argv}")
    client = build(read_file(argv[0]), argv[1], argv[2]).execute().get_job_client()
    print(json.dumps({"job": argv[2], "flink_job_id": str(client.get_job_id())}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
