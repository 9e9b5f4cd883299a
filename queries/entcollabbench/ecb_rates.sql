-- EntCollabBench: pass rates per model, subset and single/multi, in points (0–100).
--
-- r_agent = passed (agent, subtask) pairs / pairs (ecb_agent_pairs: pairs of skipped or
-- unjudged subtasks count as failed when the task file names them); r_subtask = passed
-- subtasks / subtasks (multi-step rule applied); r_task = tasks whose every subtask
-- passed / tasks.
CREATE OR REPLACE VIEW ecb_rates AS
WITH tasks AS (
    SELECT model, subset, multi, count(*) AS n_tasks, 100.0 * avg(passed::INTEGER) AS r_task
    FROM ecb_tasks
    GROUP BY model, subset, multi
),
subtasks AS (
    SELECT t.model, t.subset, t.multi, count(*) AS n_subtasks, 100.0 * avg(s.passed::INTEGER) AS r_subtask
    FROM ecb_subtasks AS s
    JOIN ecb_tasks AS t ON t.run_id = s.run_id AND t.task_id = s.task_id
    GROUP BY t.model, t.subset, t.multi
),
pairs AS (
    SELECT model, subset, multi, count(*) AS n_pairs, 100.0 * avg(passed::INTEGER) AS r_agent
    FROM ecb_agent_pairs
    GROUP BY model, subset, multi
)
SELECT
    model, subset, multi,
    n_tasks,
    coalesce(n_subtasks, 0) AS n_subtasks,
    coalesce(n_pairs, 0) AS n_pairs,
    r_agent, r_subtask, r_task
FROM tasks
LEFT JOIN subtasks USING (model, subset, multi)
LEFT JOIN pairs USING (model, subset, multi);
