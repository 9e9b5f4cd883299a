-- DecisionBench Stage-1 skill profile: per model and skill, pass rate (points) over stage1 tasks with a step of that skill, and what it cost.
--
-- cost_per_success = total cost / total quality. cost_per_task and cost_per_success are
-- NULL when any task's cost is unknown (never a partial sum). rank: 1 = best pass rate among the
-- models with that skill, ties to the lower cost per success, then the model name.
CREATE OR REPLACE VIEW dcb_skill_stats AS
WITH stats AS (
    SELECT
        t.model, s.skill,
        count(*) AS n_tasks,
        100 * avg(t.quality) AS pass_rate,
        avg(t.n_steps) AS avg_steps,
        avg(o.output_tokens) AS avg_output_tokens,
        CASE WHEN count(t.cost_usd) = count(*) THEN avg(t.cost_usd) END AS cost_per_task,
        CASE WHEN count(t.cost_usd) = count(*) THEN sum(t.cost_usd) / nullif(sum(t.quality), 0) END AS cost_per_success
    FROM dcb_tasks AS t
    JOIN dcb_task_skills AS s USING (run_id, trace_id)
    LEFT JOIN dcb_task_output AS o USING (run_id, trace_id)
    WHERE t.split = 'stage1'
    GROUP BY t.model, s.skill
)
SELECT
    *,
    row_number() OVER (PARTITION BY skill ORDER BY pass_rate DESC, cost_per_success ASC NULLS LAST, model) AS rank
FROM stats;
