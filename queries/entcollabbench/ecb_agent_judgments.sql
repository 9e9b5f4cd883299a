-- EntCollabBench: one row per judged (agent, subtask) of each task's latest attempt: the majority verdict and its votes.
--
-- passed is the driver's verdict: more than half of the judge votes passed (an errored
-- vote counts as a fail).
CREATE OR REPLACE VIEW ecb_agent_judgments AS
SELECT
    e.run_id,
    r.model,
    e.task_id,
    TRY_CAST(e.subtask AS INTEGER) AS subtask_index,
    e.agent,
    e.score = 1 AS passed,
    (e.payload ->> '$.votes_pass')::INTEGER AS votes_pass,
    (e.payload ->> '$.votes_fail')::INTEGER AS votes_fail
FROM events AS e
JOIN ecb_attempts AS a ON a.trace_id = e.trace_id
JOIN ecb_runs AS r ON r.run_id = e.run_id
WHERE e.benchmark = 'entcollabbench' AND e.kind = 'judgment';
