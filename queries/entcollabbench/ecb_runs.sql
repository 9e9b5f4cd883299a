-- EntCollabBench: one row per run (one driver result file) with the model it ran and its task set.
CREATE OR REPLACE VIEW ecb_runs AS
SELECT
    run_id,
    attrs ->> '$.model' AS model,
    attrs ->> '$.task_set' AS task_set
FROM run_attributes
WHERE attrs ->> '$.harness' = 'entcollabbench';
