-- EntCollabBench: one row per run (one driver result file) with the model it ran and its task set.
-- tracewh: by run_id
CREATE OR REPLACE VIEW ecb_runs AS
SELECT
    run_id,
    attrs ->> '$.model' AS model,
    attrs ->> '$.task_set' AS task_set
FROM run_attributes
WHERE attrs ->> '$.harness' = 'entcollabbench';
