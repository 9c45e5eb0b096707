-- Views the dashboards, notebooks and tickets read (the read-only role sees them by default).

CREATE VIEW anomalies_open AS
SELECT id, kind, source, destination, start, detected_at, severity, score, summary, evidence,
       now() - start AS open_for
FROM anomalies
WHERE end_time IS NULL;

CREATE VIEW anomalies_recent AS
SELECT id, kind, source, destination, start, detected_at, end_time, severity, score, summary, evidence,
       coalesce(end_time, now()) - start AS duration
FROM anomalies
WHERE coalesce(end_time, now()) > now() - interval '30 days';

-- The latest value of each measurement per path, for the mesh grid.
CREATE VIEW path_latest AS
SELECT p.source, p.destination,
       t.time AS throughput_time, t.throughput_bps, t.retransmits,
       l.time AS latency_time, l.delay_median_ms, l.loss_ratio,
       r.time AS trace_time, r.path_id, r.hop_count, r.reached
FROM (SELECT DISTINCT source, destination FROM path_daily) p
LEFT JOIN LATERAL (SELECT time, throughput_bps, retransmits FROM throughput x
                   WHERE x.source = p.source AND x.destination = p.destination
                   ORDER BY time DESC LIMIT 1) t ON true
LEFT JOIN LATERAL (SELECT time, delay_median_ms, loss_ratio FROM latency x
                   WHERE x.source = p.source AND x.destination = p.destination
                   ORDER BY time DESC LIMIT 1) l ON true
LEFT JOIN LATERAL (SELECT time, path_id, hop_count, reached FROM trace x
                   WHERE x.source = p.source AND x.destination = p.destination
                   ORDER BY time DESC LIMIT 1) r ON true;

-- Each trace with the hops of its path, for route-change tables.
CREATE VIEW trace_route AS
SELECT t.time, t.source, t.destination, t.path_id, h.ttl, h.ip, h.hostname, h.asn, h.mtu
FROM trace t JOIN trace_hops h USING (path_id);
