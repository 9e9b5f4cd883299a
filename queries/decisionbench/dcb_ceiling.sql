-- DecisionBench counterfactual ceiling per model and suite: mean over blind stage2 tasks of max(q, rho * p*), for rho = 1.0, 0.9, 0.8, 0.7 (quality 0-1).
--
-- p* = Stage-1 pass rate (as a fraction) of the best candidate peer on the task's
-- dominant skill; a task without a dominant skill, or whose skill no candidate has
-- Stage-1 data for, keeps q. gap = ceiling - actual.
-- tracewh: materialize (a headline view: computed once per store version, in the catalog)
CREATE OR REPLACE VIEW dcb_ceiling AS
WITH tasks AS (
    SELECT t.run_id, t.trace_id, t.model, t.suite, t.quality, s.skill
    FROM dcb_tasks AS t
    LEFT JOIN dcb_task_skills AS s ON s.run_id = t.run_id AND s.trace_id = t.trace_id AND s.dominant
    WHERE t.condition = 'blind' AND t.split = 'stage2' AND t.quality IS NOT NULL
),
best AS (
    SELECT run_id, skill, max(pass_rate) / 100 AS p_star
    FROM dcb_candidates
    GROUP BY run_id, skill
)
SELECT
    t.model, t.suite, rho.rho,
    avg(t.quality) AS actual,
    avg(greatest(t.quality, rho.rho * b.p_star)) AS ceiling,
    avg(greatest(t.quality, rho.rho * b.p_star)) - avg(t.quality) AS gap
FROM tasks AS t
LEFT JOIN best AS b ON b.run_id = t.run_id AND b.skill = t.skill
CROSS JOIN (VALUES (1.0), (0.9), (0.8), (0.7)) AS rho(rho)
GROUP BY t.model, t.suite, rho.rho;
