"""The normalise job: raw topic -> canonical records topic + dead-letters topic (PyFlink, thread mode).

Submitted by ``pathwatch pipeline start`` through Flink's client (``flink run --python <this file> SETTINGS_FILE``).
Each raw message goes through :func:`pathwatch.streaming.normalise.normalise` (the foundation's
parsers, once, in one place); records are written with the record's time as the Kafka message
time, exactly once (Kafka transactions committed on checkpoints), so the detect and store jobs
read each record once and in event time.
"""

from __future__ import annotations

import sys
import time

JOB = "normalise"


def _normalise_function():
    from pyflink.common import Row
    from pyflink.datastream import FlatMapFunction

    from pathwatch.streaming.normalise import Origin, normalise

    class Normalise(FlatMapFunction):
        def __init__(self, topic: str, max_future_ms: int):
            self.topic, self.max_future_ms = topic, max_future_ms

        def flat_map(self, row):
            body, partition, offset = row[0], row[1], row[2]
            for out in normalise(bytes(body), Origin(self.topic, partition, offset), int(time.time() * 1000),
                                 self.max_future_ms):
                yield Row(out.target, out.key, out.text.decode(), out.time_ms)

    return Normalise


def build(settings, job: str = JOB, function=None):
    """The job's table environment with its statements added (not yet executed).

    ``job`` names its checkpoints, logs, consumer group and transactional ids; ``function`` is
    the flat map from a raw row (body, partition, offset) to (target, key, value, time) rows, by
    default the normaliser (the floor bench runs the same graph under a name of its own, and with
    a function that leaves the parse out).
    """
    from pyflink.common import Types

    from pathwatch.streaming.flink_env import environments
    from pathwatch.streaming.kafka_tables import kafka_options, keyed_raw_sink

    env, tables = environments(settings, job)
    raw = settings.topics["raw"]
    tables.execute_sql(f"""CREATE TABLE raw_in (
      body BYTES,
      part INT METADATA FROM 'partition' VIRTUAL,
      off BIGINT METADATA FROM 'offset' VIRTUAL
    ) WITH ({kafka_options(raw, settings.bootstrap, f'pathwatch-{job}', settings.kafka_properties, format='raw')})""")
    tables.execute_sql(keyed_raw_sink("records_out", settings.topics["records"], settings, f"pathwatch-{job}-records"))
    tables.execute_sql(keyed_raw_sink("deadletters_out", settings.topics["deadletters"], settings,
                                      f"pathwatch-{job}-deadletters"))
    stream = tables.to_data_stream(tables.from_path("raw_in"))
    if function is None:
        function = _normalise_function()(raw, int(settings.max_future_s * 1000))
    normalised = stream.flat_map(function, output_type=Types.ROW_NAMED(
        ["target", "k", "v", "ts"], [Types.STRING(), Types.STRING(), Types.STRING(), Types.LONG()])).name("normalise").uid("normalise")
    tables.create_temporary_view("normalised", tables.from_data_stream(normalised))
    statements = tables.create_statement_set()
    statements.add_insert_sql("INSERT INTO records_out SELECT k, v, TO_TIMESTAMP_LTZ(ts, 3) FROM normalised "
                              "WHERE target = 'record'")
    statements.add_insert_sql("INSERT INTO deadletters_out SELECT k, v, TO_TIMESTAMP_LTZ(ts, 3) FROM normalised "
                              "WHERE target = 'dead'")
    return statements


def main(argv: list[str]) -> None:
    from pathwatch.streaming.runner import run_job

    run_job(JOB, argv, build)


if __name__ == "__main__":
    main(sys.argv[1:])
