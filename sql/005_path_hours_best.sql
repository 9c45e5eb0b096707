-- Daily patterns read throughput against the path's good hours, not its median hour: on a path
-- that was slow for most of the range (window-limited, say) the median hour is itself slow, and
-- its healthy hours showed as thousands of percent. The 90th percentile of the path's hourly
-- means (hours with at least one successful run) stands for what the path does when nothing is
-- wrong; busy-hour troughs and lasting limits then read as low percentages, healthy hours ~100.
DROP VIEW path_hours;

CREATE VIEW path_hours AS
WITH good_hours AS (
    SELECT source, destination,
           percentile_cont(0.9) WITHIN GROUP (ORDER BY throughput_mean_bps) AS good_bps
    FROM path_hourly WHERE throughput_runs > throughput_failed
    GROUP BY source, destination
)
SELECT h.bucket, h.source, h.destination, h.source || ' → ' || h.destination AS path,
       site_of(h.source) AS source_site, site_of(h.destination) AS destination_site,
       extract(hour FROM h.bucket AT TIME ZONE 'UTC')::integer AS hour_utc,
       h.throughput_runs, h.throughput_failed,
       h.throughput_mean_bps / 1e6 AS throughput_mbps, h.throughput_min_bps / 1e6 AS throughput_min_mbps,
       100 * h.throughput_mean_bps / nullif(g.good_bps, 0) AS throughput_pct_of_good,
       h.retransmits, h.latency_runs, h.delay_min_ms, h.delay_median_ms, h.delay_p95_ms, h.jitter_ms,
       h.packets_sent, h.packets_lost, 100 * h.loss_ratio AS loss_pct,
       h.trace_runs, h.distinct_paths, h.hop_count_max, h.unreached,
       coalesce(a.open_anomalies, 0) AS open_anomalies, a.kinds AS anomaly_kinds
FROM path_hourly h
LEFT JOIN good_hours g USING (source, destination)
LEFT JOIN LATERAL (
    SELECT count(*) AS open_anomalies, string_agg(DISTINCT x.kind, ', ') AS kinds
    FROM anomalies x
    WHERE x.source = h.source AND x.destination = h.destination
      AND x.start < h.bucket + interval '1 hour' AND coalesce(x.end_time, 'infinity') > h.bucket
) a ON true;
