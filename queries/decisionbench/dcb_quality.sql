-- DecisionBench: quality (0-1), cost, latency and delegation rate per orchestrator model, suite and condition.
--
-- Over evaluation tasks: every split but stage1 (profiling). p90_latency: continuous
-- quantile. delegations_per_task: call_model invocations per task. mean_cost: NULL when
-- any task's cost is unknown (a mean over the priced tasks alone would not be the group's).
-- tracewh: materialize (a headline view: computed once per store version, in the catalog)
CREATE OR REPLACE VIEW dcb_quality AS
SELECT
    model, suite, condition,
    count(*) AS n_tasks,
    avg(quality) AS mean_q,
    CASE WHEN count(cost_usd) = count(*) THEN avg(cost_usd) END AS mean_cost,
    avg(latency_s) AS mean_latency,
    quantile_cont(latency_s, 0.9) AS p90_latency,
    avg(n_delegations) AS delegations_per_task
FROM dcb_tasks
WHERE split IS DISTINCT FROM 'stage1'
GROUP BY model, suite, condition;
