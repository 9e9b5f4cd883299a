-- DecisionBench: the model pool of each run (from its manifest): model, vendor, tier.
-- tracewh: materialize by run_id
CREATE OR REPLACE VIEW dcb_pool AS
SELECT DISTINCT
    run_id,
    entry ->> '$.model' AS model,
    entry ->> '$.vendor' AS vendor,
    entry ->> '$.tier' AS tier
FROM (
    SELECT run_id, unnest(json_extract(payload, '$.entries[*]')) AS entry
    FROM events
    WHERE kind = 'registry' AND payload ->> '$.name' = 'model_pool'
);
