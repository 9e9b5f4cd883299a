-- DecisionBench: for each run and skill, the peers an orchestrator could delegate to, ranked by Stage-1 pass rate on that skill.
--
-- Candidates: the run's pool minus its orchestrator. Ties go to the lower cost per
-- success, then the name; peers without Stage-1 data on the skill rank last.
-- tracewh: materialize
CREATE OR REPLACE VIEW dcb_candidates AS
SELECT
    p.run_id, k.skill, p.model AS peer, p.vendor AS peer_vendor, st.pass_rate, st.cost_per_success,
    row_number() OVER (
        PARTITION BY p.run_id, k.skill
        ORDER BY st.pass_rate DESC NULLS LAST, st.cost_per_success ASC NULLS LAST, p.model
    ) AS peer_rank
FROM dcb_pool AS p
JOIN dcb_runs AS r USING (run_id)
CROSS JOIN (SELECT DISTINCT skill FROM dcb_skill_stats) AS k
LEFT JOIN dcb_skill_stats AS st ON st.model = p.model AND st.skill = k.skill
WHERE p.model <> r.model;
