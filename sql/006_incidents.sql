-- Incidents: one problem, one alarm. Every anomaly names its incident (`incident_id`: the id of
-- the problem's root anomaly, its own id when it is the root or stands alone; anomaly contract
-- v2). Members of an incident can be re-emitted later with another incident_id (a cause found
-- later adopts what it explains); the store job upserts on id, so the table follows.

-- The column: existing rows (v1, written before incidents existed) are their own incident.
ALTER TABLE anomalies ADD COLUMN incident_id uuid;
UPDATE anomalies SET incident_id = id WHERE incident_id IS NULL;
ALTER TABLE anomalies ALTER COLUMN incident_id SET NOT NULL;
CREATE INDEX anomalies_incident ON anomalies (incident_id);

-- A writer that does not know the column yet (a store job started before this migration, a v1
-- producer) still stores rows: a row without incident_id is its own incident. The trigger fills
-- it before the NOT NULL check; an upsert that names the column keeps what it names.
CREATE FUNCTION anomalies_own_incident() RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    NEW.incident_id := coalesce(NEW.incident_id, NEW.id);
    RETURN NEW;
END
$$;
CREATE TRIGGER anomalies_own_incident BEFORE INSERT OR UPDATE ON anomalies
    FOR EACH ROW EXECUTE FUNCTION anomalies_own_incident();

-- Where an incident is, from its root: the element the grouping localised it to
-- (evidence.location.element: "host:…", "hop:…", "lag:…", "path:a>b"), else the root's path.
CREATE FUNCTION incident_element(evidence jsonb, source text, destination text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT coalesce(CASE WHEN jsonb_typeof(evidence -> 'location') = 'object'
                           THEN evidence -> 'location' ->> 'element' END,
                      'path:' || source || '>' || destination) $$;

CREATE FUNCTION incident_scope(evidence jsonb) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT coalesce(CASE WHEN jsonb_typeof(evidence -> 'location') = 'object'
                           THEN evidence -> 'location' ->> 'scope' END, 'path') $$;

-- The root of each incident: the anomaly whose id is the incident's; while that row is not
-- stored (or has since joined another incident and its members are not re-emitted yet), the
-- earliest member stands in, so that every incident has exactly one root row.
CREATE VIEW incident_roots AS
SELECT DISTINCT ON (a.incident_id)
       a.incident_id, a.id AS root_id, a.kind, a.source, a.destination, a.start, a.severity, a.summary,
       a.evidence, incident_element(a.evidence, a.source, a.destination) AS element,
       incident_scope(a.evidence) AS scope
FROM anomalies a
ORDER BY a.incident_id, (a.id = a.incident_id) DESC, a.start, a.id;

-- One row per incident: its root (kind, summary, location), the paths and hosts of its members,
-- its span (end null while any member is open), worst severity, members and their kinds, and
-- its ticket (the root's; else the newest a member has). `incident` is a short label the
-- dashboards filter on (the same text in anomalies_board).
CREATE VIEW incidents AS
WITH members AS (
    SELECT a.incident_id,
           count(*) AS member_count,
           min(a.start) AS start,
           min(a.detected_at) AS detected_at,
           bool_or(a.end_time IS NULL) AS is_open,
           max(a.end_time) AS last_end,
           max(severity_rank(a.severity)) AS severity_rank,
           (array_agg(a.severity ORDER BY severity_rank(a.severity) DESC, a.start, a.id))[1] AS severity,
           string_agg(DISTINCT a.kind, ', ' ORDER BY a.kind) AS member_kinds,
           string_agg(DISTINCT a.source || '>' || a.destination, ', '
                      ORDER BY a.source || '>' || a.destination) AS paths,
           count(DISTINCT a.source || '>' || a.destination) AS path_count,
           max(a.updated_at) AS updated_at
    FROM anomalies a
    GROUP BY a.incident_id
), hosts AS (
    SELECT a.incident_id, string_agg(DISTINCT h.host, ', ' ORDER BY h.host) AS hosts,
           count(DISTINCT h.host) AS host_count
    FROM anomalies a CROSS JOIN LATERAL (VALUES (a.source), (a.destination)) AS h (host)
    WHERE h.host IS NOT NULL
    GROUP BY a.incident_id
)
SELECT m.incident_id,
       left(m.incident_id::text, 8) || ' · ' || r.kind || ' · ' || r.element AS incident,
       r.root_id, r.kind AS root_kind, r.summary AS root_summary,
       r.source AS root_source, r.destination AS root_destination,
       r.source || ' → ' || r.destination AS root_path,
       r.element AS location, r.scope AS location_scope,
       CASE WHEN jsonb_typeof(r.evidence -> 'location' -> 'paths_sharing') = 'array'
            THEN jsonb_array_length(r.evidence -> 'location' -> 'paths_sharing') END AS location_paths_sharing,
       m.paths, m.path_count, coalesce(h.hosts, '') AS hosts, coalesce(h.host_count, 0) AS host_count,
       m.start, m.detected_at,
       CASE WHEN m.is_open THEN NULL ELSE m.last_end END AS end_time,
       m.is_open,
       CASE WHEN m.is_open THEN 'open' ELSE 'closed' END AS status,
       CASE WHEN m.is_open THEN greatest(now(), m.detected_at) ELSE m.last_end END AS until_time,
       round((extract(epoch FROM CASE WHEN m.is_open THEN now() ELSE m.last_end END - m.start) / 3600)::numeric, 1)
           AS duration_h,
       m.severity, m.severity_rank, m.member_count, m.member_kinds,
       t.reference AS ticket, t.url AS ticket_url, t.state AS ticket_state,
       m.updated_at
FROM members m
JOIN incident_roots r USING (incident_id)
LEFT JOIN hosts h USING (incident_id)
LEFT JOIN LATERAL (
    SELECT k.reference, k.url, k.state FROM anomaly_tickets k JOIN anomalies x ON x.id = k.anomaly_id
    WHERE x.incident_id = m.incident_id
    ORDER BY (k.anomaly_id = r.root_id) DESC, k.updated_at DESC
    LIMIT 1
) t ON true;

-- Every anomaly as before, now with its incident: the id, whether it is the incident's root
-- row (one per incident, as in incident_roots) and the incident's label (to filter members).
CREATE OR REPLACE VIEW anomalies_board AS
SELECT a.id, a.kind, a.source, a.destination,
       a.source || ' → ' || a.destination AS path,
       site_of(a.source) AS source_site, site_of(a.destination) AS destination_site,
       a.start, a.detected_at, a.end_time,
       coalesce(a.end_time, greatest(now(), a.detected_at)) AS until_time,  -- where a timeline bar ends
       CASE WHEN a.end_time IS NULL THEN 'open' ELSE 'closed' END AS status,
       round((extract(epoch FROM coalesce(a.end_time, now()) - a.start) / 3600)::numeric, 1) AS duration_h,
       round((extract(epoch FROM a.detected_at - a.start) / 60)::numeric, 1) AS detection_delay_min,
       a.severity, severity_rank(a.severity) AS severity_rank, a.score, a.summary, a.evidence::text AS evidence,
       a.detector_version, t.reference AS ticket, t.url AS ticket_url, t.state AS ticket_state,
       a.incident_id, a.id = r.root_id AS is_root,
       left(a.incident_id::text, 8) || ' · ' || r.kind || ' · ' || r.element AS incident
FROM anomalies a
LEFT JOIN anomaly_tickets t ON t.anomaly_id = a.id
LEFT JOIN incident_roots r ON r.incident_id = a.incident_id;

-- mesh_status as before, plus the open incidents that touch each path (anomaly rows of one
-- problem count once).
CREATE OR REPLACE VIEW mesh_status AS
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
       l.delay_median_ms, round((l.delay_median_ms - lb.baseline_delay_ms)::numeric, 2) AS delay_over_baseline_ms,
       coalesce(o.open_incidents, 0) AS open_incidents
FROM paths p
LEFT JOIN LATERAL (
    SELECT count(*) AS open_anomalies, max(severity_rank(a.severity)) AS worst_rank,
           (array_agg(a.severity ORDER BY severity_rank(a.severity) DESC, a.start))[1] AS worst_severity,
           (array_agg(a.kind ORDER BY severity_rank(a.severity) DESC, a.start))[1] AS worst_kind,
           string_agg(DISTINCT a.kind, ', ') AS open_kinds,
           count(DISTINCT a.incident_id) AS open_incidents
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
