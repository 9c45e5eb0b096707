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
        "key.format": "raw", "key.fields": "k", "value.format": "raw", "value.fields-include": "EXCEPT_KEY",
        "properties.max.request.size": str(8 * 2**20), **guarantee})})"""


def jdbc_sink(name: str, table: str, columns: str, key: str, settings: PipelineSettings) -> str:
    """A JDBC upsert sink (``INSERT ... ON CONFLICT (key) DO UPDATE``) into a TimescaleDB table."""
    jdbc = settings.jdbc()
    options = {"connector": "jdbc", "url": jdbc["url"], "table-name": table, "username": jdbc["username"],
               "password": jdbc["password"], "sink.buffer-flush.max-rows": "5000",
               "sink.buffer-flush.interval": "500ms", "sink.max-retries": "5"}
    rendered = ",\n".join(f"{_quote(k)} = {_quote(v)}" for k, v in options.items())
    return f"CREATE TABLE {name} ({columns},\n PRIMARY KEY ({key}) NOT ENFORCED) WITH ({rendered})"
