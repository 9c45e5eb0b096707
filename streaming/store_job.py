"""The store job: records, anomalies and dead letters from Kafka into TimescaleDB (whose triggers keep the rollups).

Pure Flink SQL (no Python in the data path): the records topic is read with the JSON format
into one wide table (the union of the record kinds' fields) and upserted into the per-kind
hypertables on (id, time); each trace's route (path_id and hops) is upserted into trace_paths, which
keeps its first row and expands it into trace_hops; throughput intervals
one row per interval; anomalies are upserted on id (each new state of an episode overwrites
the last; the contract's ``end`` is the column ``end_time``, as JDBC does not quote
names; ``incident_id``, the id of the root anomaly of its problem, is the anomaly's own id when a
v1 record has none); dead letters on their id.

The job keeps no state: the database deduplicates by primary key, its triggers add each new
measurement row to the per-path hourly rollups (``sql/007_rollups_from_rows.sql``), so a record
written twice counts once, and write each new route's hops (``sql/008_trace_paths.sql``).
"""

from __future__ import annotations

import sys

JOB = "store"

RECORD_FIELDS = """
  `kind` STRING, `id` STRING, `time` STRING, `source` STRING, `destination` STRING,
  source_ip STRING, destination_ip STRING, `format` STRING, tool STRING, tool_version STRING,
  succeeded BOOLEAN, `error` STRING, collected_at STRING, ip_version INT,
  protocol STRING, `reverse` BOOLEAN, streams INT, duration_s DOUBLE, target_bitrate_bps DOUBLE, throughput_bps DOUBLE,
  receiver_throughput_bps DOUBLE, retransmits BIGINT, rtt_ms DOUBLE, rtt_min_ms DOUBLE, rtt_max_ms DOUBLE,
  mss_bytes INT, mtu_bytes INT, tcp_window_bytes BIGINT, receive_window_bytes BIGINT, send_buffer_bytes BIGINT,
  congestion_control STRING, jitter_ms DOUBLE, lost_packets BIGINT, sent_packets BIGINT,
  intervals ARRAY<ROW<start_s DOUBLE, end_s DOUBLE, throughput_bps DOUBLE, retransmits BIGINT,
                      cwnd_bytes BIGINT, rtt_ms DOUBLE, omitted BOOLEAN>>,
  one_way BOOLEAN, packets_sent BIGINT, packets_received BIGINT, packets_lost BIGINT, loss_ratio DOUBLE,
  duplicates BIGINT, reordered BIGINT, delay_min_ms DOUBLE, delay_median_ms DOUBLE, delay_mean_ms DOUBLE,
  delay_p95_ms DOUBLE, delay_max_ms DOUBLE, ttl_min INT, ttl_max INT, clock_synchronized BOOLEAN,
  max_clock_error_ms DOUBLE,
  path_id STRING, as_path_id STRING, hop_count INT, reached BOOLEAN, pmtu_bytes INT, probe_id BIGINT,
  measurement_id BIGINT,
  hops STRING
"""

COMMON = ("`id` STRING, `time` STRING, `source` STRING, `destination` STRING, source_ip STRING, "
          "destination_ip STRING, `format` STRING, tool STRING, tool_version STRING, succeeded BOOLEAN, "
          "`error` STRING, collected_at STRING, ip_version SMALLINT")
COMMON_SELECT = ("`id`, `time`, `source`, `destination`, source_ip, destination_ip, `format`, tool, tool_version, "
                 "succeeded, `error`, collected_at, CAST(ip_version AS SMALLINT)")

SINKS = {
    "throughput_sink": ("throughput", COMMON + """, protocol STRING, `reverse` BOOLEAN, streams INT,
        duration_s DOUBLE, throughput_bps DOUBLE, receiver_throughput_bps DOUBLE, retransmits BIGINT, rtt_ms DOUBLE,
        rtt_min_ms DOUBLE, rtt_max_ms DOUBLE, mss_bytes INT, mtu_bytes INT, tcp_window_bytes BIGINT,
        congestion_control STRING, jitter_ms DOUBLE, lost_packets BIGINT, sent_packets BIGINT,
        target_bitrate_bps DOUBLE, receive_window_bytes BIGINT, send_buffer_bytes BIGINT""", "`id`, `time`"),
    "intervals_sink": ("throughput_intervals", """`time` STRING, `id` STRING, start_s DOUBLE, end_s DOUBLE,
        throughput_bps DOUBLE, retransmits BIGINT, cwnd_bytes BIGINT, rtt_ms DOUBLE, omitted BOOLEAN""",
                       "`id`, start_s, `time`"),
    "latency_sink": ("latency", COMMON + """, one_way BOOLEAN, packets_sent BIGINT, packets_received BIGINT,
        packets_lost BIGINT, loss_ratio DOUBLE, duplicates BIGINT, reordered BIGINT, delay_min_ms DOUBLE,
        delay_median_ms DOUBLE, delay_mean_ms DOUBLE, delay_p95_ms DOUBLE, delay_max_ms DOUBLE, jitter_ms DOUBLE,
        ttl_min INT, ttl_max INT, clock_synchronized BOOLEAN, max_clock_error_ms DOUBLE""", "`id`, `time`"),
    "trace_sink": ("trace", COMMON + """, protocol STRING, path_id STRING, as_path_id STRING, hop_count INT,
        reached BOOLEAN, pmtu_bytes INT, probe_id BIGINT, measurement_id BIGINT""", "`id`, `time`"),
    "paths_sink": ("trace_paths", "path_id STRING, hops STRING, first_seen STRING", "path_id"),
    "anomalies_sink": ("anomalies", """`id` STRING, kind STRING, `source` STRING, `destination` STRING,
        `start` STRING, detected_at STRING, end_time STRING, severity STRING, score DOUBLE, summary STRING,
        evidence STRING, detector_version STRING, incident_id STRING""", "`id`"),
    "deadletters_sink": ("dead_letters", """`id` STRING, stage STRING, reason STRING, field STRING,
        `format` STRING, topic STRING, kafka_partition INT, kafka_offset BIGINT, received_at STRING,
        input STRING, input_encoding STRING""", "`id`"),
}

# The anomalies topic's JSON (contract anomaly.v2; v1 records have no incident_id), and what the
# anomalies sink takes from it: a record without an incident is its own (sql/006).
ANOMALY_FIELDS = """`id` STRING, kind STRING, `source` STRING, `destination` STRING, `start` STRING,
  detected_at STRING, `end` STRING, severity STRING, score DOUBLE, summary STRING, evidence STRING,
  detector_version STRING, incident_id STRING"""
ANOMALIES_SELECT = ("SELECT `id`, kind, `source`, `destination`, `start`, detected_at, `end`, severity, score, summary, "
                    "evidence, detector_version, COALESCE(NULLIF(incident_id, ''), `id`) AS incident_id FROM anomalies_json")

def build(settings, job: str = JOB):
    """The job's statement set (not yet executed); ``job`` names its checkpoints, logs and
    consumer group (the floor bench runs the same graph under a name of its own)."""
    from pathwatch.streaming.flink_env import environments
    from pathwatch.streaming.kafka_tables import jdbc_sink, kafka_options

    env, tables = environments(settings, job)
    group = f"pathwatch-{job}"
    config = tables.get_config()
    config.set("table.exec.sink.upsert-materialize", "NONE")
    json_options = {"format": "json", "json.fail-on-missing-field": "false", "json.ignore-parse-errors": "false"}
    tables.execute_sql(f"""CREATE TABLE records_json ({RECORD_FIELDS}
    ) WITH ({kafka_options(settings.topics['records'], settings.bootstrap, group, settings.kafka_properties,
                       **json_options)})""")
    tables.execute_sql(f"""CREATE TABLE anomalies_json ({ANOMALY_FIELDS}
    ) WITH ({kafka_options(settings.topics['anomalies'], settings.bootstrap, group, settings.kafka_properties,
                       **json_options)})""")
    tables.execute_sql(f"""CREATE TABLE deadletters_json (
      `id` STRING, stage STRING, reason STRING, field STRING, `format` STRING, topic STRING,
      kafka_partition INT, kafka_offset BIGINT, received_at STRING, input STRING, input_encoding STRING
    ) WITH ({kafka_options(settings.topics['deadletters'], settings.bootstrap, group, settings.kafka_properties,
                       **json_options)})""")
    for name, (table, columns, key) in SINKS.items():
        tables.execute_sql(jdbc_sink(name, table, columns, key, settings))
    s = tables.create_statement_set()
    s.add_insert_sql(f"""INSERT INTO throughput_sink SELECT {COMMON_SELECT}, protocol, `reverse`, streams, duration_s,
        throughput_bps, receiver_throughput_bps, retransmits, rtt_ms, rtt_min_ms, rtt_max_ms, mss_bytes, mtu_bytes,
        tcp_window_bytes, congestion_control, jitter_ms, lost_packets, sent_packets, target_bitrate_bps,
        receive_window_bytes, send_buffer_bytes
        FROM records_json WHERE `kind` = 'throughput'""")
    s.add_insert_sql("""INSERT INTO intervals_sink SELECT r.`time`, r.`id`, i.start_s, i.end_s, i.throughput_bps,
        i.retransmits, i.cwnd_bytes, i.rtt_ms, i.omitted
        FROM records_json AS r CROSS JOIN UNNEST(r.intervals)
          AS i (start_s, end_s, throughput_bps, retransmits, cwnd_bytes, rtt_ms, omitted)
        WHERE r.`kind` = 'throughput'""")
    s.add_insert_sql(f"""INSERT INTO latency_sink SELECT {COMMON_SELECT}, one_way, packets_sent, packets_received,
        packets_lost, loss_ratio, duplicates, reordered, delay_min_ms, delay_median_ms, delay_mean_ms, delay_p95_ms,
        delay_max_ms, jitter_ms, ttl_min, ttl_max, clock_synchronized, max_clock_error_ms
        FROM records_json WHERE `kind` = 'latency'""")
    s.add_insert_sql(f"""INSERT INTO trace_sink SELECT {COMMON_SELECT}, protocol, path_id, as_path_id, hop_count,
        reached, pmtu_bytes, probe_id, measurement_id FROM records_json WHERE `kind` = 'trace'""")
    # Each trace's route (its hops as the record's JSON); the database keeps the first row of each
    # path_id and writes its hops into trace_hops (sql/008).
    s.add_insert_sql("""INSERT INTO paths_sink SELECT path_id, hops, `time` FROM records_json
        WHERE `kind` = 'trace' AND path_id IS NOT NULL AND hops IS NOT NULL""")
    s.add_insert_sql(f"INSERT INTO anomalies_sink {ANOMALIES_SELECT}")
    s.add_insert_sql("INSERT INTO deadletters_sink SELECT * FROM deadletters_json")
    return s


def main(argv: list[str]) -> None:
    from pathwatch.streaming.runner import run_job

    run_job(JOB, argv, build)


if __name__ == "__main__":
    main(sys.argv[1:])
