-- EntCollabBench: one row per subtask of each task's latest attempt.
--
-- passed applies the multi-step rule: once a subtask fails, every later subtask of the
-- task fails (the driver already skips them; this also covers a judge error, after
-- which later subtasks still run). skipped: not run because an earlier one failed or
-- seeding failed.
-- tracewh: materialize by run_id within ecb_runs
CREATE OR REPLACE VIEW ecb_subtasks AS
WITH own AS (
    SELECT
        e.run_id,
        e.task_id,
        (e.payload ->> '$.subtask_index')::INTEGER AS subtask_index,
        e.payload ->> '$.target_agent' AS target_agent,
        e.score = 1 AS own_pass,
        coalesce((e.payload ->> '$.skipped')::BOOLEAN, false) AS skipped
    FROM events AS e
    JOIN ecb_attempts AS a ON a.trace_id = e.trace_id
    WHERE e.benchmark = 'entcollabbench' AND e.kind = 'score' AND e.payload ->> '$.metric' = 'subtask_pass'
)
SELECT
    o.run_id,
    r.model,
    o.task_id,
    o.subtask_index,
    o.target_agent,
    bool_and(o.own_pass) OVER (PARTITION BY o.run_id, o.task_id ORDER BY o.subtask_index
                               ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS passed,
    o.skipped
FROM own AS o
JOIN ecb_runs AS r USING (run_id);
