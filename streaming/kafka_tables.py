"""Flink SQL DDL for the pipeline's Kafka topics and TimescaleDB tables, built from settings.

>>> print(kafka_options("t", "localhost:9092", "g").splitlines()[0])
'connector' = 'kafka',
"""

from __future__ import annotations

from pathwatch.streaming.settings import PipelineSettings


def _quote(value: str) -> str:
    return "'" + str(value).replace("'", "''") + "'"


def kafka_options(topic: str, bootstrap: str, group: str | None = None, security: dict[str, str] | None = None,
                  **extra: str) -> str:
    """The WITH options of a Kafka table; ``security`` are the Java client's SASL/TLS settings
    (PipelineSettings.kafka_properties), each given as ``properties.<name>``."""
    options = {"connector": "kafka", "topic": topic, "properties.bootstrap.servers": bootstrap}
    options.update({f"properties.{key}": value for key, value in (security or {}).items()})
    if group is not None:
        options.update({"properties.group.id": group, "scan.startup.mode": "group-offsets",
                        "properties.auto.offset.reset": "earliest",
                        "properties.isolation.level": "read_committed"})
    options.update(extra)
    return ",\n".join(f"{_quote(k)} = {_quote(v)}" for k, v in options.items())


# A topic as (k, v): its message key and value as raw text (the path or id, and the JSON).
KEYED_RAW = {"key.format": "raw", "key.fields": "k", "value.format": "raw", "value.fields-include": "EXCEPT_KEY"}


def day_to_second(seconds: float) -> str:
    """A Flink SQL interval literal of ``seconds`` (to the millisecond; a SECOND literal takes 2 digits).

    >>> day_to_second(900), day_to_second(90061.5)
    ("INTERVAL '0 00:15:00.000' DAY TO SECOND(3)", "INTERVAL '1 01:01:01.500' DAY TO SECOND(3)")
    """
    days, rest = divmod(int(round(seconds * 1000)), 86_400_000)
    hours, rest = divmod(rest, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    return f"INTERVAL '{days} {hours:02d}:{minutes:02d}:{rest / 1000:06.3f}' DAY TO SECOND(3)"


def keyed_raw_source(name: str, topic: str, settings: PipelineSettings, group: str, watermark_delay_s: float,
                     alignment_group: str) -> str:
    """A Kafka source table (k STRING key, v STRING value, rt its Kafka time), watermarked per partition.

    The watermark trails each partition's Kafka time (for the records topic the record time, which
    the normalise job sets) by ``watermark_delay_s``; the minimum over partitions wins. Idleness is
    long on purpose: a short one lets a partition's watermark run ahead when a stream resumes,
    firing false silences (so a partition that never gets data, fewer paths than partitions, holds
    the watermark this long). Partitions read far ahead of the slowest one wait (bounded buffers).
    """
    options = kafka_options(topic, settings.bootstrap, group, settings.kafka_properties, **{
        **KEYED_RAW, "scan.watermark.idle-timeout": "10 min", "scan.watermark.alignment.group": alignment_group,
        "scan.watermark.alignment.max-drift": "6 h", "scan.watermark.alignment.update-interval": "1 s"})
    return f"""CREATE TABLE {name} (
  k STRING, v STRING, rt TIMESTAMP_LTZ(3) METADATA FROM 'timestamp' VIRTUAL,
  WATERMARK FOR rt AS rt - {day_to_second(watermark_delay_s)}
) WITH ({options})"""


def keyed_raw_sink(name: str, topic: str, settings: PipelineSettings, transactional_id: str | None = None) -> str:
    """A Kafka sink table (k STRING key, v STRING value as raw bytes, ts record time)."""
    guarantee = {"sink.delivery-guarantee": "at-least-once"}
    if transactional_id is not None:
        guarantee = {"sink.delivery-guarantee": "exactly-once", "sink.transactional-id-prefix": transactional_id,
                     # below the broker's transaction.max.timeout.ms (15 min)
                     "properties.transaction.timeout.ms": "600000"}
    return f"""CREATE TABLE {name} (
  k STRING, v STRING, ts TIMESTAMP_LTZ(3) METADATA FROM 'timestamp'
) WITH ({kafka_options(topic, settings.bootstrap, None, settings.kafka_properties, **{
        **KEYED_RAW, "properties.max.request.size": str(8 * 2**20), **guarantee})})"""


def jdbc_sink(name: str, table: str, columns: str, key: str, settings: PipelineSettings) -> str:
    """A JDBC upsert sink (``INSERT ... ON CONFLICT (key) DO UPDATE``) into a TimescaleDB table."""
    jdbc = settings.jdbc()
    options = {"connector": "jdbc", "url": jdbc["url"], "table-name": table, "username": jdbc["username"],
               "password": jdbc["password"], "sink.buffer-flush.max-rows": "5000",
               "sink.buffer-flush.interval": "500ms", "sink.max-retries": "5"}
    rendered = ",\n".join(f"{_quote(k)} = {_quote(v)}" for k, v in options.items())
    return f"CREATE TABLE {name} ({columns},\n PRIMARY KEY ({key}) NOT ENFORCED) WITH ({rendered})"
