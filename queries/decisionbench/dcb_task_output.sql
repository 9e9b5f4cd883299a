-- DecisionBench: the orchestrator's output tokens in each task attempt (run, trace).
--
-- NULL when no step of the attempt logs its completion tokens (a sum over the steps that do,
-- as the Stage-1 profile's average output reads it). Kept per run, so that dcb_skill_stats,
-- which pools every run, reads this table instead of every orchestrator step of the store.
-- tracewh: materialize by run_id within dcb_runs
CREATE OR REPLACE VIEW dcb_task_output AS
SELECT run_id, trace_id, sum(completion_tokens) AS output_tokens
FROM dcb_steps
GROUP BY run_id, trace_id;
