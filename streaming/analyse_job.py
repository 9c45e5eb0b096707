"""The analyse job: raw topic -> records, anomalies and dead letters, in one job graph (PyFlink, thread mode).

Submitted by ``pathwatch pipeline start`` through Flink's client (``flink run --python <this
file> SETTINGS_FILE``). One graph, so a record is parsed once and reaches the detectors without
another trip through Kafka::

    raw topic ─ normalise ─┬─ records topic (exactly once, Kafka transactions; the store job reads it)
                           ├─ dead letters topic (stage normalise)
                           └─ event time = record time ─ key by path ─ detect ─┬─ incidents ─ anomalies topic
                                                                               └─ dead letters (stage detect: late)

``normalise`` is :func:`pathwatch.streaming.normalise.normalise` (the foundation's parsers, once,
in one place). The detectors take a path's records once the watermark, the newest record time
less ``pipeline.ordering_delay_s``, passes them (:mod:`pathwatch.streaming.detect_ops`), so the
anomalies equal ``pathwatch detect`` on the same input. After a failure the whole graph
restarts from one checkpoint: source offsets, buffered records and detector state agree.
"""

from __future__ import annotations

import math
import sys
import time

JOB = "analyse"


def normalise_function():
    from pyflink.common import Row
    from pyflink.datastream import FlatMapFunction

    from pathwatch.streaming.normalise import Origin, normalise

    class Normalise(FlatMapFunction):
        def __init__(self, topic: str):
            self.topic = topic

        def flat_map(self, row):
            body, partition, offset = row[0], row[1], row[2]
            for out in normalise(bytes(body), Origin(self.topic, partition, offset), int(time.time() * 1000)):
                yield Row(out.target, out.key, out.text.decode(), out.time_ms)

    return Normalise


def sql_interval(seconds: float) -> str:
    """A Flink SQL interval literal of ``seconds``, rounded up to whole seconds (at most 99 days).

    >>> sql_interval(900), sql_interval(90061.5)
    ("INTERVAL '0 00:15:00' DAY TO SECOND", "INTERVAL '1 01:01:02' DAY TO SECOND")
    """
    days, rest = divmod(math.ceil(seconds), 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    return f"INTERVAL '{days} {hours:02d}:{minutes:02d}:{secs:02d}' DAY TO SECOND"


def build(settings, config_path: str | None = None):
    """The job's statement set (not yet executed)."""
    from pyflink.common import Types
    from pyflink.table import DataTypes, Schema
    from pyflink.table.expressions import col

    from pathwatch.streaming.detect_ops import detect_function, incidents_function
    from pathwatch.streaming.flink_env import environments
    from pathwatch.streaming.kafka_tables import kafka_options, keyed_raw_sink

    env, tables = environments(settings, JOB)
    raw, records = settings.topics["raw"], settings.topics["records"]
    tables.execute_sql(f"""CREATE TABLE raw_in (
      body BYTES,
      part INT METADATA FROM 'partition' VIRTUAL,
      off BIGINT METADATA FROM 'offset' VIRTUAL
    ) WITH ({kafka_options(raw, settings.bootstrap, 'pathwatch-normalise', format='raw')})""")
    tables.execute_sql(keyed_raw_sink("records_out", records, settings, "pathwatch-normalise-records"))
    tables.execute_sql(keyed_raw_sink("deadletters_out", settings.topics["deadletters"], settings,
                                      "pathwatch-normalise-deadletters"))
    tables.execute_sql(keyed_raw_sink("anomalies_out", settings.topics["anomalies"], settings))

    rows = Types.ROW_NAMED(["target", "k", "v", "ts"], [Types.STRING(), Types.STRING(), Types.STRING(), Types.LONG()])
    # Stable operator ids: a savepoint maps onto the job again at another parallelism.
    normalised = (tables.to_data_stream(tables.from_path("raw_in"))
                  .flat_map(normalise_function()(raw), output_type=rows).name("normalise").uid("normalise"))
    # Event time = record time, the watermark trailing the newest by the ordering delay (Flink
    # SQL's watermark assigner, emitted every pipeline.auto-watermark-interval).
    timed = tables.from_data_stream(normalised, Schema.new_builder()
                                    .column("target", DataTypes.STRING()).column("k", DataTypes.STRING())
                                    .column("v", DataTypes.STRING()).column("ts", DataTypes.BIGINT())
                                    .column_by_expression("rowtime", "TO_TIMESTAMP_LTZ(ts, 3)")
                                    .watermark("rowtime", f"rowtime - {sql_interval(settings.ordering_delay_s)}")
                                    .build())
    tables.create_temporary_view("normalised", timed)
    records_in_time = tables.to_data_stream(timed.where(col("target") == "record"))
    out = Types.ROW_NAMED(["target", "k", "v"], [Types.STRING(), Types.STRING(), Types.STRING()])
    detected = (records_in_time.key_by(lambda row: row[1], key_type=Types.STRING())
                .process(detect_function(config_path)(records), output_type=out).name("detect").uid("detect"))
    # Anomalies (and path announcements) to one grouping task; late records go straight out.
    grouped = (detected.filter(lambda row: row[0] != "dead")
               .key_by(lambda row: "incidents", key_type=Types.STRING())
               .process(incidents_function(config_path)(), output_type=out).name("incidents").uid("incidents")
               .set_parallelism(1))
    tables.create_temporary_view("detected", tables.from_data_stream(detected.filter(lambda row: row[0] == "dead")
                                                                     .union(grouped)))
    statements = tables.create_statement_set()
    statements.add_insert_sql("INSERT INTO records_out SELECT k, v, TO_TIMESTAMP_LTZ(ts, 3) FROM normalised "
                              "WHERE target = 'record'")
    statements.add_insert_sql("INSERT INTO deadletters_out SELECT k, v, TO_TIMESTAMP_LTZ(ts, 3) FROM normalised "
                              "WHERE target = 'dead' UNION ALL SELECT k, v, CAST(NULL AS TIMESTAMP_LTZ(3)) "
                              "FROM detected WHERE target = 'dead'")
    statements.add_insert_sql("INSERT INTO anomalies_out SELECT k, v, CAST(NULL AS TIMESTAMP_LTZ(3)) "
                              "FROM detected WHERE target = 'anomaly'")
    return statements


def main(argv: list[str]) -> None:
    from pathwatch.streaming.runner import run_job

    run_job(JOB, argv, build)


if __name__ == "__main__":
    main(sys.argv[1:])
