-- DecisionBench: one row per run (archive, τ-bench or BFCL file) with its orchestrator model, suite, shard, split and condition.
-- tracewh: materialize by run_id (what the catalog reads to skip DecisionBench blocks for other runs)
CREATE OR REPLACE VIEW dcb_runs AS
SELECT
    r.run_id,
    r.attrs ->> '$.model' AS model,
    r.attrs ->> '$.suite' AS suite,
    r.attrs ->> '$.shard' AS shard,
    r.attrs ->> '$.split' AS split,
    r.attrs ->> '$.condition' AS condition
FROM run_attributes AS r
WHERE r.attrs ->> '$.suite' IN ('gaia', 'tau', 'bfcl');
