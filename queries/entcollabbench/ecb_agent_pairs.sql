-- EntCollabBench: every (agent, subtask) pair R_agent and role accuracy count, with its outcome.
--
-- A pair is judged (the judge's verdict) or, when the task file is ingested, a pair of
-- the reference trajectory the judge never saw: a subtask skipped after an earlier
-- failure, or one that failed before judging (request error, timeout, judge error).
-- Those count as failed, by the multi-step rule. Without the task file such pairs are
-- unknown and only judged pairs count (the driver's agent_pass_rate).
-- tracewh: materialize by run_id within ecb_runs
CREATE OR REPLACE VIEW ecb_agent_pairs AS
WITH judged AS (
    SELECT run_id, task_id, subtask_index, agent, passed FROM ecb_agent_judgments
),
pairs AS (
    SELECT
        coalesce(j.run_id, f.run_id) AS run_id,
        coalesce(j.task_id, f.task_id) AS task_id,
        coalesce(j.subtask_index, f.subtask_index) AS subtask_index,
        coalesce(j.agent, f.agent) AS agent,
        coalesce(j.passed, false) AS passed,
        j.agent IS NOT NULL AS judged
    FROM judged AS j
    FULL JOIN ecb_reference_pairs AS f
        ON f.run_id = j.run_id AND f.task_id = j.task_id AND f.subtask_index = j.subtask_index AND f.agent = j.agent
)
SELECT p.run_id, t.model, p.task_id, t.subset, t.multi, p.subtask_index, p.agent, p.passed, p.judged
FROM pairs AS p
JOIN ecb_tasks AS t ON t.run_id = p.run_id AND t.task_id = p.task_id;
