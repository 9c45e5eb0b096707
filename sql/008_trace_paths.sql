-- Each distinct route once, written by the store job as one row per trace: the database keeps the
-- first row of each path_id and expands its hops into trace_hops. Until now the store job wrote
-- trace_hops itself after picking the first trace of each path_id in Flink, which kept every
-- path_id it had seen in its state for 36 hours: traces with a silent hop here and there make new
-- path_ids all the time, so that state grew with the traces (the soak saw the store's checkpoint
-- grow all along). Now the store job keeps no state at all.

CREATE TABLE trace_paths (
    path_id     text        PRIMARY KEY,
    hops        jsonb       NOT NULL,   -- the record's hops (measurement contract), in TTL order
    first_seen  timestamptz             -- the time of the first trace stored with it
);

-- The routes stored so far, from their hops.
INSERT INTO trace_paths
SELECT path_id,
       jsonb_agg(jsonb_build_object('ttl', ttl, 'ip', ip, 'other_ips', string_to_array(other_ips, ','),
                                    'hostname', hostname, 'asn', asn, 'as_owner', as_owner, 'mtu', mtu,
                                    'error', error) ORDER BY ttl),
       min(first_seen)
FROM trace_hops GROUP BY path_id;

-- A route written again (every trace of it is) changes nothing: the first row stays.
CREATE FUNCTION trace_paths_keep_first() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RETURN NULL;
END $$;

CREATE FUNCTION trace_paths_hops() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO trace_hops (path_id, ttl, ip, other_ips, hostname, asn, as_owner, mtu, error, first_seen)
    SELECT NEW.path_id, (hop->>'ttl')::integer, hop->>'ip',
           nullif(array_to_string(ARRAY(SELECT jsonb_array_elements_text(
               CASE jsonb_typeof(hop->'other_ips') WHEN 'array' THEN hop->'other_ips' ELSE '[]' END)), ','), ''),
           hop->>'hostname', (hop->>'asn')::bigint, hop->>'as_owner', (hop->>'mtu')::integer, hop->>'error',
           NEW.first_seen
    FROM jsonb_array_elements(NEW.hops) AS hop
    WHERE hop ? 'ttl'
    ON CONFLICT (path_id, ttl) DO NOTHING;
    RETURN NULL;
END $$;

CREATE TRIGGER keep_first BEFORE UPDATE ON trace_paths FOR EACH ROW EXECUTE FUNCTION trace_paths_keep_first();
CREATE TRIGGER hops AFTER INSERT ON trace_paths FOR EACH ROW EXECUTE FUNCTION trace_paths_hops();
