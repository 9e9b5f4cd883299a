-- EntCollabBench: one row per delegation attempt in each task's latest attempt: who asked whom, at which depth, and how it ended.
--
-- depth: the receiving agent's depth (1 = first hop from the subtask's starting agent).
-- status: ok | non_ok | error | no_outcome (no answer logged) | blocked_cycle |
-- refused_depth (the max-depth refusal, seen only in the ask_* tool result) | refused.
CREATE OR REPLACE VIEW ecb_delegation_tree AS
SELECT
    d.run_id,
    r.model,
    d.task_id,
    TRY_CAST(d.subtask AS INTEGER) AS subtask_index,
    d.agent AS parent_agent,
    d.to_agent AS child_agent,
    d.depth,
    d.status
FROM delegations AS d
JOIN ecb_attempts AS a ON a.trace_id = d.trace_id
JOIN ecb_runs AS r ON r.run_id = d.run_id
WHERE d.benchmark = 'entcollabbench';
