-- EntCollabBench: the paper's Table 1, one row per model, in points (0–100).
--
-- workflow_task / approval_task: single-step tasks passed; *_multi_subtask and
-- *_multi_task: multi-step subtasks and tasks passed; *_avg: task-level over the
-- subset's single- and multi-step tasks together; avg: task-level over all tasks.
-- tracewh: materialize (a headline view: computed once per store version, in the catalog)
CREATE OR REPLACE VIEW ecb_table1 AS
WITH tasks AS (
    SELECT
        model,
        100.0 * avg(passed::INTEGER) FILTER (WHERE subset = 'workflow' AND NOT multi) AS workflow_task,
        100.0 * avg(passed::INTEGER) FILTER (WHERE subset = 'workflow' AND multi) AS workflow_multi_task,
        100.0 * avg(passed::INTEGER) FILTER (WHERE subset = 'workflow') AS workflow_avg,
        100.0 * avg(passed::INTEGER) FILTER (WHERE subset = 'approval' AND NOT multi) AS approval_task,
        100.0 * avg(passed::INTEGER) FILTER (WHERE subset = 'approval' AND multi) AS approval_multi_task,
        100.0 * avg(passed::INTEGER) FILTER (WHERE subset = 'approval') AS approval_avg,
        100.0 * avg(passed::INTEGER) AS avg
    FROM ecb_tasks
    GROUP BY model
),
multi_subtasks AS (
    SELECT
        t.model,
        100.0 * avg(s.passed::INTEGER) FILTER (WHERE t.subset = 'workflow') AS workflow_multi_subtask,
        100.0 * avg(s.passed::INTEGER) FILTER (WHERE t.subset = 'approval') AS approval_multi_subtask
    FROM ecb_subtasks AS s
    JOIN ecb_tasks AS t ON t.run_id = s.run_id AND t.task_id = s.task_id
    WHERE t.multi
    GROUP BY t.model
)
SELECT
    model,
    workflow_task, workflow_multi_subtask, workflow_multi_task, workflow_avg,
    approval_task, approval_multi_subtask, approval_multi_task, approval_avg,
    avg
FROM tasks
LEFT JOIN multi_subtasks USING (model);
