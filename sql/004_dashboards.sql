-- What the Superset dashboards (dashboards/) read: the mesh's hosts with their sites, ticket
-- references for anomalies, and views that do the per-path arithmetic once, in SQL.

-- The measurement hosts and the site each belongs to (from the mesh file: `pathwatch db hosts`,
-- and `pathwatch demo` for its simulated mesh). Hosts missing here show their own name as site.
CREATE TABLE hosts (
    name        text PRIMARY KEY,
    site        text NOT NULL,
    city        text,
    address     text,
    asn         bigint,
    updated_at  timestamptz NOT NULL DEFAULT now()
);

-- The ticket an anomaly opened, once the ticketing bridge has one (one ticket per anomaly id).
CREATE TABLE anomaly_tickets (
    anomaly_id  uuid PRIMARY KEY,
    system      text NOT NULL,        -- which ticket system
    reference   text NOT NULL,        -- the ticket's key or number as people quote it
    url         text,
    state       text,
    updated_at  timestamptz NOT NULL DEFAULT now()
);

-- The severity ladder as a number (0 = nothing open), for colour scales and "worst of".
CREATE FUNCTION severity_rank(severity text) RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT CASE severity WHEN 'critical' THEN 4 WHEN 'major' THEN 3 WHEN 'warning' THEN 2
                           WHEN 'info' THEN 1 ELSE 0 END $$;

-- A host's site, or its own name when the mesh did not say.
CREATE FUNCTION site_of(host text) RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE
AS $$ SELECT coalesce((SELECT site FROM hosts WHERE name = host), host) $$;

-- Every anomaly with its path, sites, state, duration and ticket.
CREATE VIEW anomalies_board AS
SELECT a.id, a.kind, a.source, a.destination,
       a.source || ' → ' || a.destination AS path,
       site_of(a.source) AS source_site, site_of(a.destination) AS destination_site,
       a.start, a.detected_at, a.end_time,
       coalesce(a.end_time, greatest(now(), a.detected_at)) AS until_time,  -- where a timeline bar ends
       CASE WHEN a.end_time IS NULL THEN 'open' ELSE 'closed' END AS status,
       round((extract(epoch FROM coalesce(a.end_time, now()) - a.start) / 3600)::numeric, 1) AS duration_h,
       round((extract(epoch FROM a.detected_at - a.start) / 60)::numeric, 1) AS detection_delay_min,
       a.severity, severity_rank(a.severity) AS severity_rank, a.score, a.summary, a.evidence::text AS evidence,
       a.detector_version, t.reference AS ticket, t.url AS ticket_url, t.state AS ticket_state
FROM anomalies a
LEFT JOIN anomaly_tickets t ON t.anomaly_id = a.id;

-- One row per path: the worst open anomaly, and the latest throughput, loss and delay against
-- the path's own baseline (the median of the 7 days before the latest measurement).
CREATE VIEW mesh_status AS
WITH paths AS (
    SELECT DISTINCT source, destination FROM path_daily
    UNION
    SELECT DISTINCT source, destination FROM anomalies WHERE source IS NOT NULL AND destination IS NOT NULL
)
SELECT p.source, p.destination, p.source || ' → ' || p.destination AS path,
       site_of(p.source) AS source_site, site_of(p.destination) AS destination_site,
       coalesce(o.open_anomalies, 0) AS open_anomalies, coalesce(o.worst_rank, 0) AS worst_rank,
       coalesce(o.worst_severity, 'ok') AS worst_severity, o.worst_kind, o.open_kinds,
       t.time AS throughput_time, t.throughput_bps, tb.baseline_bps,
       round((100 * t.throughput_bps / nullif(tb.baseline_bps, 0))::numeric, 1) AS throughput_pct_of_baseline,
       l.bucket AS latency_hour, round((100 * l.loss_ratio)::numeric, 4) AS loss_pct,
       round((100 * lb.baseline_loss)::numeric, 4) AS baseline_loss_pct,
       l.delay_median_ms, round((l.delay_median_ms - lb.baseline_delay_ms)::numeric, 2) AS delay_over_baseline_ms
FROM paths p
LEFT JOIN LATERAL (
    SELECT count(*) AS open_anomalies, max(severity_rank(a.severity)) AS worst_rank,
           (array_agg(a.severity ORDER BY severity_rank(a.severity) DESC, a.start))[1] AS worst_severity,
           (array_agg(a.kind ORDER BY severity_rank(a.severity) DESC, a.start))[1] AS worst_kind,
           string_agg(DISTINCT a.kind, ', ') AS open_kinds
    FROM anomalies a
    WHERE a.source = p.source AND a.destination = p.destination AND a.end_time IS NULL
) o ON true
LEFT JOIN LATERAL (
    SELECT x.time, x.throughput_bps FROM throughput x
    WHERE x.source = p.source AND x.destination = p.destination AND x.succeeded
    ORDER BY x.time DESC LIMIT 1
) t ON true
LEFT JOIN LATERAL (
    SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY x.throughput_bps) AS baseline_bps FROM throughput x
    WHERE x.source = p.source AND x.destination = p.destination AND x.succeeded
      AND x.time >= t.time - interval '7 days' AND x.time < t.time
) tb ON true
LEFT JOIN LATERAL (
    SELECT h.bucket, h.loss_ratio, h.delay_median_ms FROM path_hourly h
    WHERE h.source = p.source AND h.destination = p.destination AND h.latency_runs > 0
    ORDER BY h.bucket DESC LIMIT 1
) l ON true
LEFT JOIN LATERAL (
    SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY h.loss_ratio) AS baseline_loss,
           percentile_cont(0.5) WITHIN GROUP (ORDER BY h.delay_median_ms) AS baseline_delay_ms
    FROM path_hourly h
    WHERE h.source = p.source AND h.destination = p.destination AND h.latency_runs > 0
      AND h.bucket >= l.bucket - interval '7 days' AND h.bucket < l.bucket
) lb ON true;

-- Hourly rollups with the path's sites, the hour of day, throughput against the path's median
-- hour, and the anomalies open during the hour (for marking anomaly windows on series).
CREATE VIEW path_hours AS
WITH medians AS (
    SELECT source, destination,
           percentile_cont(0.5) WITHIN GROUP (ORDER BY throughput_mean_bps) AS median_bps
    FROM path_hourly WHERE throughput_runs > throughput_failed
    GROUP BY source, destination
)
SELECT h.bucket, h.source, h.destination, h.source || ' → ' || h.destination AS path,
       site_of(h.source) AS source_site, site_of(h.destination) AS destination_site,
       extract(hour FROM h.bucket AT TIME ZONE 'UTC')::integer AS hour_utc,
       h.throughput_runs, h.throughput_failed,
       h.throughput_mean_bps / 1e6 AS throughput_mbps, h.throughput_min_bps / 1e6 AS throughput_min_mbps,
       100 * h.throughput_mean_bps / nullif(m.median_bps, 0) AS throughput_pct_of_median,
       h.retransmits, h.latency_runs, h.delay_min_ms, h.delay_median_ms, h.delay_p95_ms, h.jitter_ms,
       h.packets_sent, h.packets_lost, 100 * h.loss_ratio AS loss_pct,
       h.trace_runs, h.distinct_paths, h.hop_count_max, h.unreached,
       coalesce(a.open_anomalies, 0) AS open_anomalies, a.kinds AS anomaly_kinds
FROM path_hourly h
LEFT JOIN medians m USING (source, destination)
LEFT JOIN LATERAL (
    SELECT count(*) AS open_anomalies, string_agg(DISTINCT x.kind, ', ') AS kinds
    FROM anomalies x
    WHERE x.source = h.source AND x.destination = h.destination
      AND x.start < h.bucket + interval '1 hour' AND coalesce(x.end_time, 'infinity') > h.bucket
) a ON true;

-- Daily rollups with sites and loss in percent, for long ranges.
CREATE VIEW path_days AS
SELECT d.bucket, d.source, d.destination, d.source || ' → ' || d.destination AS path,
       site_of(d.source) AS source_site, site_of(d.destination) AS destination_site,
       d.throughput_runs, d.throughput_mean_bps / 1e6 AS throughput_mbps, d.retransmits,
       d.delay_min_ms, d.delay_median_ms, d.delay_p95_ms, d.jitter_ms,
       d.packets_sent, d.packets_lost, 100 * d.loss_ratio AS loss_pct,
       d.trace_runs, d.distinct_paths, d.hop_count_max, d.unreached
FROM path_daily d;

-- Per path and day: how many throughput runs fell well below the path's usual rate or carried
-- many more retransmits than usual (a failing member of a k-link aggregate degrades ~1 in k).
CREATE VIEW throughput_degradation_daily AS
WITH usual AS (
    SELECT source, destination,
           percentile_cont(0.5) WITHIN GROUP (ORDER BY throughput_bps) AS median_bps,
           percentile_cont(0.5) WITHIN GROUP (ORDER BY retransmits) AS median_retransmits
    FROM throughput WHERE succeeded GROUP BY source, destination
)
SELECT time_bucket(interval '1 day', t.time) AS day, t.source, t.destination,
       t.source || ' → ' || t.destination AS path,
       site_of(t.source) AS source_site, site_of(t.destination) AS destination_site,
       count(*) AS runs,
       count(*) FILTER (WHERE t.throughput_bps < 0.8 * u.median_bps
                           OR t.retransmits > 10 * greatest(u.median_retransmits, 10)) AS degraded_runs,
       round((100.0 * count(*) FILTER (WHERE t.throughput_bps < 0.8 * u.median_bps
                                          OR t.retransmits > 10 * greatest(u.median_retransmits, 10))
              / count(*))::numeric, 1) AS degraded_pct
FROM throughput t JOIN usual u USING (source, destination)
WHERE t.succeeded
GROUP BY 1, 2, 3;

-- Route changes with the hops around the divergence point, old and new, from the evidence.
CREATE VIEW route_changes AS
SELECT a.id, a.source, a.destination, a.source || ' → ' || a.destination AS path,
       site_of(a.source) AS source_site, site_of(a.destination) AS destination_site,
       a.start, a.end_time, coalesce(a.end_time, greatest(now(), a.detected_at)) AS until_time,
       CASE WHEN a.end_time IS NULL THEN 'open' ELSE 'closed' END AS status,
       a.severity, (a.evidence ->> 'divergence_ttl')::integer AS divergence_ttl,
       array_to_string(ARRAY(SELECT jsonb_array_elements_text(a.evidence -> 'old_hops')), ' → ') AS old_hops,
       array_to_string(ARRAY(SELECT jsonb_array_elements_text(a.evidence -> 'new_hops')), ' → ') AS new_hops,
       (a.evidence ->> 'old_hop_count')::integer AS old_hop_count,
       (a.evidence ->> 'new_hop_count')::integer AS new_hop_count,
       array_to_string(ARRAY(SELECT jsonb_array_elements_text(a.evidence -> 'old_as_path')), ' ') AS old_as_path,
       array_to_string(ARRAY(SELECT jsonb_array_elements_text(a.evidence -> 'new_as_path')), ' ') AS new_as_path,
       (a.evidence ->> 'as_changed')::boolean AS as_changed,
       (a.evidence ->> 'rtt_step_ms')::double precision AS rtt_step_ms,
       a.evidence ->> 'tool' AS tool, a.summary
FROM anomalies a
WHERE a.kind = 'route_change';
