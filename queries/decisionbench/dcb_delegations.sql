-- DecisionBench: one row per call_model invocation: who delegated to whom, the dominant skill before the call, and the peer's rank on it.
--
-- dominant_skill: from dcb_delegation_skills (the modal skill of the orchestrator's tagged
-- steps strictly before the calling step; NULL when none, and then the call counts in no
-- fidelity). peer_rank: the peer's place in dcb_candidates for that skill (NULL when the
-- peer is not a candidate, e.g. outside the pool).
-- tracewh: materialize
CREATE OR REPLACE VIEW dcb_delegations AS
SELECT
    c.run_id, r.model, r.suite, r.condition, c.task_id, c.step, c.peer,
    p.vendor AS peer_vendor,
    c.dominant_skill,
    k.peer_rank,
    c.event_id
FROM dcb_delegation_skills AS c
JOIN dcb_runs AS r USING (run_id)
LEFT JOIN dcb_pool AS p ON p.run_id = c.run_id AND p.model = c.peer
LEFT JOIN dcb_candidates AS k ON k.run_id = c.run_id AND k.skill = c.dominant_skill AND k.peer = c.peer;
