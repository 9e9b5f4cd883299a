-- EntCollabBench: per run and agent, the tools π(agent) allows, the agents D(agent) it may delegate to, and d_max.
--
-- From the archive's agent_specs.json / agent_toolsets.json, else the benchmark's
-- published defaults (see the ingest adapter's permissions module).
CREATE OR REPLACE VIEW ecb_permissions AS
WITH entries AS (
    SELECT
        run_id,
        TRY_CAST(payload ->> '$.max_depth' AS INTEGER) AS max_depth,
        unnest(from_json(json_extract(payload, '$.entries'), '["JSON"]')) AS entry
    FROM events
    WHERE benchmark = 'entcollabbench' AND kind = 'registry' AND payload ->> '$.name' = 'ecb_permissions'
)
SELECT DISTINCT
    run_id,
    entry ->> '$.agent' AS agent,
    from_json(json_extract(entry, '$.tools'), '["VARCHAR"]') AS tools,
    from_json(json_extract(entry, '$.delegate_to'), '["VARCHAR"]') AS delegate_to,
    max_depth
FROM entries;
