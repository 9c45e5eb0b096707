-- Rollups from the stored rows. Until now the store job computed path_hourly/path_daily in Flink
-- and deduplicated records by id there first, which kept every record id in Flink state: its
-- checkpoint grew ~113 bytes per record without bound (the 30-minute soak's failure). Now the
-- database deduplicates by primary key, as for the measurements themselves: a row-level AFTER
-- INSERT trigger on each measurement hypertable adds the row to its path-hour. INSERT ... ON
-- CONFLICT DO UPDATE fires it only for a row that was new, so a record published twice, or
-- written again after a crash, counts once; the rollups always agree with the stored rows.
--
-- Each kind has its own hourly table (only that kind's writer touches it, so two sinks never
-- wait on, or deadlock over, the same row); trace hours are kept per route (path_id) so the
-- number of distinct routes adds up over any span. `path_hourly` and `path_daily` become views
-- with the columns they had (means from sums and counts), so dashboards and views read them as
-- before; the day is the UTC day of the hours.

CREATE FUNCTION plus(a anycompatible, b anycompatible) RETURNS anycompatible
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    -- a + b where a missing term counts as nothing, as SUM() skips nulls (null + null stays null)
    SELECT CASE WHEN a IS NULL THEN b WHEN b IS NULL THEN a ELSE a + b END
$$;

CREATE TABLE hourly_throughput (
    source        text             NOT NULL,
    destination   text             NOT NULL,
    bucket        timestamptz      NOT NULL,
    runs          bigint           NOT NULL,
    failed        bigint           NOT NULL,
    bps_sum       double precision,           -- successful runs with a throughput
    bps_n         bigint           NOT NULL,
    bps_min       double precision,
    bps_max       double precision,
    retransmits   bigint,
    PRIMARY KEY (source, destination, bucket)
);
SELECT create_hypertable('hourly_throughput', 'bucket', chunk_time_interval => interval '90 days');

CREATE TABLE hourly_latency (
    source        text             NOT NULL,
    destination   text             NOT NULL,
    bucket        timestamptz      NOT NULL,
    runs          bigint           NOT NULL,  -- successful windows only
    delay_min_ms  double precision,
    median_sum    double precision,
    median_n      bigint           NOT NULL,
    p95_sum       double precision,
    p95_n         bigint           NOT NULL,
    jitter_sum    double precision,
    jitter_n      bigint           NOT NULL,
    packets_sent  bigint,
    packets_lost  bigint,
    PRIMARY KEY (source, destination, bucket)
);
SELECT create_hypertable('hourly_latency', 'bucket', chunk_time_interval => interval '90 days');

CREATE TABLE hourly_trace (
    source         text        NOT NULL,
    destination    text        NOT NULL,
    bucket         timestamptz NOT NULL,
    path_id        text        NOT NULL,  -- '' for routes of rollups from before this migration
    runs           bigint      NOT NULL,
    hop_count_max  integer,
    unreached      bigint      NOT NULL,
    PRIMARY KEY (source, destination, bucket, path_id)
);
SELECT create_hypertable('hourly_trace', 'bucket', chunk_time_interval => interval '90 days');

CREATE FUNCTION rollup_throughput() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    ok boolean := NEW.succeeded;
    bps double precision := CASE WHEN NEW.succeeded THEN NEW.throughput_bps END;
BEGIN
    INSERT INTO hourly_throughput AS h
    VALUES (NEW.source, NEW.destination, date_trunc('hour', NEW.time, 'UTC'), 1, (NOT ok)::int,
            bps, (bps IS NOT NULL)::int, bps, bps, CASE WHEN ok THEN NEW.retransmits END)
    ON CONFLICT (source, destination, bucket) DO UPDATE SET
        runs = h.runs + 1, failed = h.failed + excluded.failed,
        bps_sum = plus(h.bps_sum, excluded.bps_sum), bps_n = h.bps_n + excluded.bps_n,
        bps_min = least(h.bps_min, excluded.bps_min), bps_max = greatest(h.bps_max, excluded.bps_max),
        retransmits = plus(h.retransmits, excluded.retransmits);
    RETURN NULL;
END $$;

CREATE FUNCTION rollup_latency() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO hourly_latency AS h
    VALUES (NEW.source, NEW.destination, date_trunc('hour', NEW.time, 'UTC'), 1, NEW.delay_min_ms,
            NEW.delay_median_ms, (NEW.delay_median_ms IS NOT NULL)::int,
            NEW.delay_p95_ms, (NEW.delay_p95_ms IS NOT NULL)::int,
            NEW.jitter_ms, (NEW.jitter_ms IS NOT NULL)::int, NEW.packets_sent, NEW.packets_lost)
    ON CONFLICT (source, destination, bucket) DO UPDATE SET
        runs = h.runs + 1, delay_min_ms = least(h.delay_min_ms, excluded.delay_min_ms),
        median_sum = plus(h.median_sum, excluded.median_sum), median_n = h.median_n + excluded.median_n,
        p95_sum = plus(h.p95_sum, excluded.p95_sum), p95_n = h.p95_n + excluded.p95_n,
        jitter_sum = plus(h.jitter_sum, excluded.jitter_sum), jitter_n = h.jitter_n + excluded.jitter_n,
        packets_sent = plus(h.packets_sent, excluded.packets_sent),
        packets_lost = plus(h.packets_lost, excluded.packets_lost);
    RETURN NULL;
END $$;

CREATE FUNCTION rollup_trace() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO hourly_trace AS h
    VALUES (NEW.source, NEW.destination, date_trunc('hour', NEW.time, 'UTC'), NEW.path_id, 1, NEW.hop_count,
            (NEW.reached IS NOT NULL AND NOT NEW.reached)::int)
    ON CONFLICT (source, destination, bucket, path_id) DO UPDATE SET
        runs = h.runs + 1, hop_count_max = greatest(h.hop_count_max, excluded.hop_count_max),
        unreached = h.unreached + excluded.unreached;
    RETURN NULL;
END $$;

CREATE TRIGGER rollup AFTER INSERT ON throughput FOR EACH ROW
    WHEN (NEW.source IS NOT NULL AND NEW.destination IS NOT NULL) EXECUTE FUNCTION rollup_throughput();
CREATE TRIGGER rollup AFTER INSERT ON latency FOR EACH ROW
    WHEN (NEW.source IS NOT NULL AND NEW.destination IS NOT NULL AND NEW.succeeded) EXECUTE FUNCTION rollup_latency();
CREATE TRIGGER rollup AFTER INSERT ON trace FOR EACH ROW
    WHEN (NEW.source IS NOT NULL AND NEW.destination IS NOT NULL) EXECUTE FUNCTION rollup_trace();

-- The rollups Flink wrote so far (exact: it deduplicated by id), into the new tables. Means come
-- back as sums over the runs; a trace hour keeps its number of distinct routes as that many
-- unnamed ones ('' for the first, then '#2', '#3', ...), its runs on the first.
INSERT INTO hourly_throughput
SELECT source, destination, bucket, throughput_runs, throughput_failed,
       throughput_mean_bps * (throughput_runs - throughput_failed),
       CASE WHEN throughput_mean_bps IS NULL THEN 0 ELSE throughput_runs - throughput_failed END,
       throughput_min_bps, throughput_max_bps, retransmits
FROM path_hourly WHERE throughput_runs > 0;
INSERT INTO hourly_latency
SELECT source, destination, bucket, latency_runs, delay_min_ms,
       delay_median_ms * latency_runs, CASE WHEN delay_median_ms IS NULL THEN 0 ELSE latency_runs END,
       delay_p95_ms * latency_runs, CASE WHEN delay_p95_ms IS NULL THEN 0 ELSE latency_runs END,
       jitter_ms * latency_runs, CASE WHEN jitter_ms IS NULL THEN 0 ELSE latency_runs END,
       packets_sent, packets_lost
FROM path_hourly WHERE latency_runs > 0;
INSERT INTO hourly_trace
SELECT source, destination, bucket, CASE WHEN n = 1 THEN '' ELSE '#' || n END,
       CASE WHEN n = 1 THEN trace_runs ELSE 0 END, hop_count_max, CASE WHEN n = 1 THEN unreached ELSE 0 END
FROM path_hourly CROSS JOIN LATERAL generate_series(1, greatest(distinct_paths, 1)) AS n
WHERE trace_runs > 0;

-- Views that read the old tables are recreated, unchanged, on the new views.
CREATE TEMPORARY TABLE rollup_dependents ON COMMIT DROP AS
WITH RECURSIVE dependent(oid, depth) AS (
    SELECT r.ev_class, 1 FROM pg_depend d JOIN pg_rewrite r ON r.oid = d.objid
    WHERE d.refobjid IN ('path_hourly'::regclass, 'path_daily'::regclass)
    UNION
    SELECT r.ev_class, dependent.depth + 1 FROM dependent
    JOIN pg_depend d ON d.refobjid = dependent.oid JOIN pg_rewrite r ON r.oid = d.objid
    WHERE r.ev_class <> dependent.oid
)
SELECT c.relname AS name, max(depth) AS depth, pg_get_viewdef(c.oid) AS definition
FROM dependent JOIN pg_class c ON c.oid = dependent.oid GROUP BY c.oid, c.relname;

DO $$
DECLARE view record;
BEGIN
    FOR view IN SELECT name FROM rollup_dependents ORDER BY depth DESC LOOP
        EXECUTE format('DROP VIEW IF EXISTS %I', view.name);
    END LOOP;
END $$;

DROP TABLE path_hourly;
DROP TABLE path_daily;

-- One path's rollup over ``unit`` ('hour' or 'day'; buckets in UTC), the columns path_hourly had.
-- Inlined into the views: for 'hour' the bucket is the tables' own column, so a time filter on
-- path_hourly skips the chunks outside it.
CREATE FUNCTION path_rollups(unit text) RETURNS TABLE (
    bucket timestamptz, source text, destination text,
    throughput_runs bigint, throughput_failed bigint, throughput_mean_bps double precision,
    throughput_min_bps double precision, throughput_max_bps double precision, retransmits bigint,
    latency_runs bigint, delay_min_ms double precision, delay_median_ms double precision,
    delay_p95_ms double precision, jitter_ms double precision, packets_sent bigint, packets_lost bigint,
    loss_ratio double precision, trace_runs bigint, distinct_paths bigint, hop_count_max integer,
    unreached bigint)
LANGUAGE sql STABLE AS $$
SELECT CASE unit WHEN 'hour' THEN u.bucket ELSE date_trunc(unit, u.bucket, 'UTC') END, u.source, u.destination,
       sum(u.throughput_runs)::bigint, sum(u.throughput_failed)::bigint,
       sum(u.bps_sum) / nullif(sum(u.bps_n), 0), min(u.bps_min), max(u.bps_max), sum(u.retransmits)::bigint,
       sum(u.latency_runs)::bigint, min(u.delay_min_ms),
       sum(u.median_sum) / nullif(sum(u.median_n), 0), sum(u.p95_sum) / nullif(sum(u.p95_n), 0),
       sum(u.jitter_sum) / nullif(sum(u.jitter_n), 0),
       sum(u.packets_sent)::bigint, sum(u.packets_lost)::bigint,
       sum(u.packets_lost)::double precision / nullif(sum(u.packets_sent), 0),
       sum(u.trace_runs)::bigint, count(DISTINCT u.path_id), max(u.hop_count_max), sum(u.unreached)::bigint
FROM (
    SELECT bucket, source, destination, runs AS throughput_runs, failed AS throughput_failed,
           bps_sum, bps_n, bps_min, bps_max, retransmits,
           0 AS latency_runs, NULL::float8 AS delay_min_ms, NULL::float8 AS median_sum, 0 AS median_n,
           NULL::float8 AS p95_sum, 0 AS p95_n, NULL::float8 AS jitter_sum, 0 AS jitter_n,
           NULL::bigint AS packets_sent, NULL::bigint AS packets_lost,
           0 AS trace_runs, NULL::text AS path_id, NULL::integer AS hop_count_max, 0 AS unreached
    FROM hourly_throughput
    UNION ALL
    SELECT bucket, source, destination, 0, 0, NULL, 0, NULL, NULL, NULL,
           runs, delay_min_ms, median_sum, median_n, p95_sum, p95_n, jitter_sum, jitter_n,
           packets_sent, packets_lost, 0, NULL, NULL, 0
    FROM hourly_latency
    UNION ALL
    SELECT bucket, source, destination, 0, 0, NULL, 0, NULL, NULL, NULL,
           0, NULL, NULL, 0, NULL, 0, NULL, 0, NULL, NULL, runs, path_id, hop_count_max, unreached
    FROM hourly_trace
) u
GROUP BY 1, 2, 3
$$;

CREATE VIEW path_hourly AS SELECT * FROM path_rollups('hour');
CREATE VIEW path_daily AS SELECT * FROM path_rollups('day');

DO $$
DECLARE view record;
BEGIN
    FOR view IN SELECT name, definition FROM rollup_dependents ORDER BY depth LOOP
        EXECUTE format('CREATE VIEW %I AS %s', view.name, view.definition);
    END LOOP;
END $$;
