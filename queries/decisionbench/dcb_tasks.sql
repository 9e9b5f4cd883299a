-- DecisionBench: one row per task attempt (a task, or a τ-bench task x trial): quality, cost (peers included), latency, steps, delegations, profile reads.
--
-- quality: the task's quality score; for BFCL, 1 unless the category's score file lists
-- the test as a failure (NULL when no score file of its category was ingested).
-- cost_usd: the sum over the task's LLM calls (orchestrator and the peers it delegated
-- to) when every one has a cost, else the harness's task cost (NULL when the harness
-- gives none: a sum missing an unpriced call would be a made-up partial total). latency_s: the harness's task
-- latency, else the sum of the orchestrator's call latencies. n_steps: the harness's
-- count, else the orchestrator's completions.
-- tracewh: materialize by run_id within dcb_runs
CREATE OR REPLACE VIEW dcb_tasks AS
WITH attempts AS (
    SELECT
        run_id,
        trace_id,
        any_value(task_id) AS task_id,
        coalesce(max(TRY_CAST(payload ->> '$.trial' AS INTEGER)) FILTER (WHERE kind = 'score'), 0) AS trial,
        max(score) FILTER (WHERE kind = 'score' AND payload ->> '$.metric' = 'quality') AS quality,
        count(*) FILTER (WHERE kind = 'judgment' AND payload ->> '$.verdict' = 'fail') AS failures,
        any_value(payload ->> '$.category') FILTER (WHERE kind = 'task_finished') AS category,
        max(cost_usd) FILTER (WHERE kind = 'task_finished') AS harness_cost,
        max(latency_s) FILTER (WHERE kind = 'task_finished') AS harness_latency,
        max(TRY_CAST(payload ->> '$.n_steps' AS INTEGER)) FILTER (WHERE kind = 'task_finished') AS harness_steps,
        CASE WHEN count(*) FILTER (WHERE kind = 'llm_call' AND cost_usd IS NULL) = 0
             THEN sum(cost_usd) FILTER (WHERE kind = 'llm_call') END AS llm_cost,
        sum(latency_s) FILTER (WHERE kind = 'llm_call' AND agent IN ('orchestrator', 'agent')) AS llm_latency,
        count(*) FILTER (WHERE kind = 'llm_call' AND agent IN ('orchestrator', 'agent')) AS completions,
        count(*) FILTER (WHERE kind = 'delegation') AS n_delegations,
        count(*) FILTER (WHERE kind = 'tool_call' AND tool_name = 'read_profile') AS n_profile_reads
    FROM events
    WHERE benchmark IN ('decisionbench', 'tau', 'bfcl') AND trace_id IS NOT NULL
    GROUP BY run_id, trace_id
),
scored_categories AS (
    SELECT DISTINCT run_id, payload ->> '$.category' AS category
    FROM events
    WHERE kind = 'registry' AND payload ->> '$.name' = 'bfcl_score_summary'
)
SELECT
    a.run_id, r.model, r.suite, r.shard, r.split, r.condition, a.task_id, a.trial,
    coalesce(a.quality, CASE WHEN c.category IS NOT NULL THEN CASE WHEN a.failures > 0 THEN 0.0 ELSE 1.0 END END) AS quality,
    coalesce(a.llm_cost, a.harness_cost) AS cost_usd,
    coalesce(a.harness_latency, a.llm_latency) AS latency_s,
    coalesce(a.harness_steps, a.completions) AS n_steps,
    a.n_delegations,
    a.n_profile_reads,
    a.trace_id
FROM attempts AS a
JOIN dcb_runs AS r USING (run_id)
LEFT JOIN scored_categories AS c ON c.run_id = a.run_id AND c.category = a.category;
