-- DecisionBench: each task attempt's skills (steps tagged with each) and its dominant skill.
--
-- The dominant skill is the modal skill of the orchestrator's tagged steps, ties to the
-- most recent; _infra_delegation and untagged steps do not count.
-- tracewh: materialize by run_id within dcb_runs
CREATE OR REPLACE VIEW dcb_task_skills AS
SELECT
    run_id, trace_id, skill,
    count(*) AS n_steps,
    max(step) AS last_step,
    row_number() OVER (PARTITION BY run_id, trace_id ORDER BY count(*) DESC, max(step) DESC) = 1 AS dominant
FROM dcb_step_skills
WHERE skill IS NOT NULL AND skill <> '_infra_delegation'
GROUP BY run_id, trace_id, skill;
