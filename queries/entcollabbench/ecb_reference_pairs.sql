-- EntCollabBench: the (agent, subtask) pairs of the reference trajectories, from the ingested task files.
--
-- Workflow tasks: the distinct ground_truth[].agent of each subtask; approval tasks: the
-- approval specialists with a reference decision (who the judge evaluates).
CREATE OR REPLACE VIEW ecb_reference_pairs AS
WITH subtasks AS (
    SELECT DISTINCT run_id, task_id, unnest(from_json(json_extract(payload, '$.subtasks'), '["JSON"]')) AS sub
    FROM events
    WHERE benchmark = 'entcollabbench' AND kind = 'registry' AND payload ->> '$.name' = 'ecb_task_spec'
)
SELECT DISTINCT
    run_id,
    task_id,
    (sub ->> '$.subtask_index')::INTEGER AS subtask_index,
    unnest(from_json(json_extract(sub, '$.reference_agents'), '["VARCHAR"]')) AS agent
FROM subtasks;
