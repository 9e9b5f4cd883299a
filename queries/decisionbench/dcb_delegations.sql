-- DecisionBench: one row per call_model invocation: who delegated to whom, the dominant skill before the call, and the peer's rank on it.
--
-- dominant_skill: the modal skill of the orchestrator's tagged steps strictly before the
-- calling step (ties to the most recent; NULL when none, and then the call counts in no
-- fidelity). peer_rank: the peer's place in dcb_candidates for that skill (NULL when the
-- peer is not a candidate, e.g. outside the pool).
-- tracewh: materialize
CREATE OR REPLACE VIEW dcb_delegations AS
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
SELECT
    c.run_id, r.model, r.suite, r.condition, c.task_id, c.step, c.peer,
    p.vendor AS peer_vendor,
    d.skill AS dominant_skill,
    k.peer_rank,
    c.event_id
FROM calls AS c
JOIN dcb_runs AS r USING (run_id)
LEFT JOIN dcb_pool AS p ON p.run_id = c.run_id AND p.model = c.peer
LEFT JOIN dominant AS d USING (event_id)
LEFT JOIN dcb_candidates AS k ON k.run_id = c.run_id AND k.skill = d.skill AND k.peer = c.peer;
