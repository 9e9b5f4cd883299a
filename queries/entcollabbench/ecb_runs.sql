-- EntCollabBench: one row per run (one driver result file) with the model it ran and its task set.
-- tracewh: materialize by run_id (what the catalog reads to skip EntCollabBench blocks for other runs)
CREATE OR REPLACE VIEW ecb_runs AS
SELECT
    run_id,
    attrs ->> '$.model' AS model,
    attrs ->> '$.task_set' AS task_set
FROM run_attributes
WHERE attrs ->> '$.harness' = 'entcollabbench';
