-- DecisionBench: one row per call_model invocation with the dominant skill of the orchestrator's tagged steps before it.
--
-- dominant_skill: the modal skill of the orchestrator's tagged steps strictly before the
-- calling step (ties to the most recent; NULL when none, and then the call counts in no
-- fidelity). What dcb_delegations needs of a run's own events, kept per run: a commit
-- recomputes it for the runs it touched only, and dcb_delegations joins it with the peer
-- ranks, which pool every run.
-- tracewh: materialize by run_id
CREATE OR REPLACE VIEW dcb_delegation_skills AS
WITH calls AS (
    SELECT d.event_id, d.run_id, d.trace_id, d.task_id, CAST(d.payload ->> '$.step' AS INTEGER) AS step, d.to_model AS peer
    FROM delegations AS d
    WHERE d.benchmark = 'decisionbench'
),
prior AS (
    SELECT c.event_id, s.skill, count(*) AS n, max(s.step) AS last_step
    FROM calls AS c
    JOIN dcb_step_skills AS s ON s.run_id = c.run_id AND s.trace_id = c.trace_id AND s.step < c.step
    WHERE s.skill IS NOT NULL AND s.skill <> '_infra_delegation'
    GROUP BY c.event_id, s.skill
),
dominant AS (
    SELECT event_id, skill
    FROM prior
    QUALIFY row_number() OVER (PARTITION BY event_id ORDER BY n DESC, last_step DESC) = 1
)
SELECT c.run_id, c.trace_id, c.task_id, c.step, c.peer, d.skill AS dominant_skill, c.event_id
FROM calls AS c
LEFT JOIN dominant AS d USING (event_id);
