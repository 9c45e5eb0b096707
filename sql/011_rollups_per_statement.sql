-- Rollups per statement, not per row. The row-level triggers of 007 ran one upsert into the
-- path's hour for every stored measurement (~80 µs of PostgreSQL CPU a row, the store's largest
-- cost). The store job writes in batches that the JDBC driver sends as multi-row INSERTs
-- (reWriteBatchedInserts), so a statement-level trigger that reads the statement's inserted rows
-- (a transition table: hypertables have them since TimescaleDB 2.18) adds them to their
-- path-hours with one upsert per hour touched. What counts is unchanged: only rows the statement
-- inserted are in its transition table (a row ON CONFLICT DO UPDATE rewrote is not), so a record
-- stored twice still counts once; the sums, counts, minima and maxima are those the row triggers
-- added up one row at a time.

DROP TRIGGER rollup ON throughput;
DROP TRIGGER rollup ON latency;
DROP TRIGGER rollup ON trace;
DROP FUNCTION rollup_throughput();
DROP FUNCTION rollup_latency();
DROP FUNCTION rollup_trace();

CREATE FUNCTION rollup_throughput_rows() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO hourly_throughput AS h
    SELECT source, destination, date_trunc('hour', time, 'UTC'), count(*), count(*) FILTER (WHERE NOT succeeded),
           sum(bps), count(bps), min(bps), max(bps), sum(retransmits) FILTER (WHERE succeeded)
    FROM (SELECT source, destination, time, succeeded, retransmits,
                 CASE WHEN succeeded THEN throughput_bps END AS bps
          FROM inserted WHERE source IS NOT NULL AND destination IS NOT NULL) AS rows
    GROUP BY 1, 2, 3
    ON CONFLICT (source, destination, bucket) DO UPDATE SET
        runs = h.runs + excluded.runs, failed = h.failed + excluded.failed,
        bps_sum = plus(h.bps_sum, excluded.bps_sum), bps_n = h.bps_n + excluded.bps_n,
        bps_min = least(h.bps_min, excluded.bps_min), bps_max = greatest(h.bps_max, excluded.bps_max),
        retransmits = plus(h.retransmits, excluded.retransmits);
    RETURN NULL;
END $$;

CREATE FUNCTION rollup_latency_rows() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO hourly_latency AS h
    SELECT source, destination, date_trunc('hour', time, 'UTC'), count(*), min(delay_min_ms),
           sum(delay_median_ms), count(delay_median_ms), sum(delay_p95_ms), count(delay_p95_ms),
           sum(jitter_ms), count(jitter_ms), sum(packets_sent), sum(packets_lost)
    FROM inserted WHERE source IS NOT NULL AND destination IS NOT NULL AND succeeded
    GROUP BY 1, 2, 3
    ON CONFLICT (source, destination, bucket) DO UPDATE SET
        runs = h.runs + excluded.runs, delay_min_ms = least(h.delay_min_ms, excluded.delay_min_ms),
        median_sum = plus(h.median_sum, excluded.median_sum), median_n = h.median_n + excluded.median_n,
        p95_sum = plus(h.p95_sum, excluded.p95_sum), p95_n = h.p95_n + excluded.p95_n,
        jitter_sum = plus(h.jitter_sum, excluded.jitter_sum), jitter_n = h.jitter_n + excluded.jitter_n,
        packets_sent = plus(h.packets_sent, excluded.packets_sent),
        packets_lost = plus(h.packets_lost, excluded.packets_lost);
    RETURN NULL;
END $$;

CREATE FUNCTION rollup_trace_rows() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO hourly_trace AS h
    SELECT source, destination, date_trunc('hour', time, 'UTC'), path_id, count(*), max(hop_count),
           count(*) FILTER (WHERE reached IS NOT NULL AND NOT reached)
    FROM inserted WHERE source IS NOT NULL AND destination IS NOT NULL
    GROUP BY 1, 2, 3, 4
    ON CONFLICT (source, destination, bucket, path_id) DO UPDATE SET
        runs = h.runs + excluded.runs, hop_count_max = greatest(h.hop_count_max, excluded.hop_count_max),
        unreached = h.unreached + excluded.unreached;
    RETURN NULL;
END $$;

CREATE TRIGGER rollup AFTER INSERT ON throughput REFERENCING NEW TABLE AS inserted
    FOR EACH STATEMENT EXECUTE FUNCTION rollup_throughput_rows();
CREATE TRIGGER rollup AFTER INSERT ON latency REFERENCING NEW TABLE AS inserted
    FOR EACH STATEMENT EXECUTE FUNCTION rollup_latency_rows();
CREATE TRIGGER rollup AFTER INSERT ON trace REFERENCING NEW TABLE AS inserted
    FOR EACH STATEMENT EXECUTE FUNCTION rollup_trace_rows();
