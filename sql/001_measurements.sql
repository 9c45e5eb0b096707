-- Canonical measurements (contract/schemas/measurement.v1.schema.json), one hypertable
-- per kind. Every row's key is the record's deterministic id plus its time (TimescaleDB needs
-- the partitioning column in every unique index), so the pipeline's writes are upserts.

CREATE TABLE throughput (
    time                    timestamptz      NOT NULL,
    id                      uuid             NOT NULL,
    source                  text,
    destination             text,
    source_ip               text,
    destination_ip          text,
    format                  text             NOT NULL,
    tool                    text             NOT NULL,
    tool_version            text,
    succeeded               boolean          NOT NULL,
    error                   text,
    collected_at            timestamptz,
    ip_version              smallint,
    protocol                text,
    reverse                 boolean,
    streams                 integer,
    duration_s              double precision,
    throughput_bps          double precision,
    receiver_throughput_bps double precision,
    retransmits             bigint,
    rtt_ms                  double precision,
    rtt_min_ms              double precision,
    rtt_max_ms              double precision,
    mss_bytes               integer,
    mtu_bytes               integer,
    tcp_window_bytes        bigint,
    congestion_control      text,
    jitter_ms               double precision,
    lost_packets            bigint,
    sent_packets            bigint,
    PRIMARY KEY (id, time)
);
SELECT create_hypertable('throughput', 'time', chunk_time_interval => interval '7 days');
CREATE INDEX throughput_path_time ON throughput (source, destination, time DESC);

-- One row per reported interval of a throughput run (iperf3 intervals), keyed by the run.
CREATE TABLE throughput_intervals (
    time            timestamptz      NOT NULL,  -- the run's time
    id              uuid             NOT NULL,  -- the run's id
    start_s         double precision NOT NULL,
    end_s           double precision NOT NULL,
    throughput_bps  double precision,
    retransmits     bigint,
    cwnd_bytes      bigint,
    rtt_ms          double precision,
    omitted         boolean,
    PRIMARY KEY (id, start_s, time)
);
SELECT create_hypertable('throughput_intervals', 'time', chunk_time_interval => interval '7 days');

CREATE TABLE latency (
    time                timestamptz      NOT NULL,
    id                  uuid             NOT NULL,
    source              text,
    destination         text,
    source_ip           text,
    destination_ip      text,
    format              text             NOT NULL,
    tool                text             NOT NULL,
    tool_version        text,
    succeeded           boolean          NOT NULL,
    error               text,
    collected_at        timestamptz,
    ip_version          smallint,
    one_way             boolean          NOT NULL,
    packets_sent        bigint,
    packets_received    bigint,
    packets_lost        bigint,
    loss_ratio          double precision,
    duplicates          bigint,
    reordered           bigint,
    delay_min_ms        double precision,
    delay_median_ms     double precision,
    delay_mean_ms       double precision,
    delay_p95_ms        double precision,
    delay_max_ms        double precision,
    jitter_ms           double precision,
    ttl_min             integer,
    ttl_max             integer,
    clock_synchronized  boolean,
    max_clock_error_ms  double precision,
    PRIMARY KEY (id, time)
);
SELECT create_hypertable('latency', 'time', chunk_time_interval => interval '7 days');
CREATE INDEX latency_path_time ON latency (source, destination, time DESC);

-- Traces point at their path (path_id: a fingerprint of the answering hops); the hops of each
-- distinct path are stored once, in trace_hops.
CREATE TABLE trace (
    time            timestamptz NOT NULL,
    id              uuid        NOT NULL,
    source          text,
    destination     text,
    source_ip       text,
    destination_ip  text,
    format          text        NOT NULL,
    tool            text        NOT NULL,
    tool_version    text,
    succeeded       boolean     NOT NULL,
    error           text,
    collected_at    timestamptz,
    ip_version      smallint,
    protocol        text,
    path_id         text        NOT NULL,
    as_path_id      text,
    hop_count       integer     NOT NULL,
    reached         boolean,
    pmtu_bytes      integer,
    probe_id        bigint,
    measurement_id  bigint,
    PRIMARY KEY (id, time)
);
SELECT create_hypertable('trace', 'time', chunk_time_interval => interval '7 days');
CREATE INDEX trace_path_time ON trace (source, destination, time DESC);
CREATE INDEX trace_path_id ON trace (path_id);

CREATE TABLE trace_hops (
    path_id     text    NOT NULL,
    ttl         integer NOT NULL,
    ip          text,
    other_ips   text,           -- other responders at this TTL, comma-separated
    hostname    text,
    asn         bigint,
    as_owner    text,
    mtu         integer,
    error       text,
    first_seen  timestamptz,
    PRIMARY KEY (path_id, ttl)
);
CREATE INDEX trace_hops_ip ON trace_hops (ip);

-- Anomaly episodes (contract/schemas/anomaly.v1.schema.json): one row per id, updated
-- in place as the episode grows and closes.
CREATE TABLE anomalies (
    id                uuid        PRIMARY KEY,
    kind              text        NOT NULL,
    source            text,
    destination       text,
    start             timestamptz NOT NULL,
    detected_at       timestamptz NOT NULL,
    end_time          timestamptz,    -- the contract's "end": null while the episode is open
    severity          text        NOT NULL,
    score             double precision,
    summary           text        NOT NULL,
    evidence          jsonb       NOT NULL,
    detector_version  text        NOT NULL,
    updated_at        timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX anomalies_path_start ON anomalies (source, destination, start DESC);
CREATE INDEX anomalies_open_by_kind ON anomalies (kind) WHERE end_time IS NULL;

-- Inputs a stage rejected: the original bytes, the reason and where they came from.
CREATE TABLE dead_letters (
    id            uuid        PRIMARY KEY,   -- uuid5 over (topic, partition, offset, stage)
    stage         text        NOT NULL,      -- normalise | detect
    reason        text        NOT NULL,
    field         text,
    format        text,
    topic         text,
    kafka_partition integer,
    kafka_offset  bigint,
    received_at   timestamptz NOT NULL,
    input         text        NOT NULL,      -- the original input (base64 when not UTF-8)
    input_encoding text       NOT NULL DEFAULT 'utf-8'
);
CREATE INDEX dead_letters_received ON dead_letters (received_at DESC);
