-- Per-path hourly and daily statistics, written by the rollup job (Flink SQL tumbling windows
-- on record time). Long dashboard ranges read these instead of the raw hypertables.

CREATE TABLE path_hourly (
    bucket                timestamptz      NOT NULL,
    source                text             NOT NULL,
    destination           text             NOT NULL,
    throughput_runs       bigint           NOT NULL,
    throughput_failed     bigint           NOT NULL,
    throughput_mean_bps   double precision,
    throughput_min_bps    double precision,
    throughput_max_bps    double precision,
    retransmits           bigint,
    latency_runs          bigint           NOT NULL,
    delay_min_ms          double precision,
    delay_median_ms       double precision,
    delay_p95_ms          double precision,
    jitter_ms             double precision,
    packets_sent          bigint,
    packets_lost          bigint,
    loss_ratio            double precision,
    trace_runs            bigint           NOT NULL,
    distinct_paths        bigint,
    hop_count_max         integer,
    unreached             bigint,
    PRIMARY KEY (source, destination, bucket)
);
SELECT create_hypertable('path_hourly', 'bucket', chunk_time_interval => interval '30 days');

CREATE TABLE path_daily (LIKE path_hourly INCLUDING ALL);
SELECT create_hypertable('path_daily', 'bucket', chunk_time_interval => interval '365 days');
