-- DecisionBench: one row per orchestrator completion step, with what the step tagger reads.
--
-- tool_names / arguments: the tool calls the step requested; prompt_tokens falls back to
-- prompt characters / 4 where a source logs no usage (τ-bench); prior_tool_calls counts
-- the tool calls of the task's earlier steps.
-- tracewh: by run_id within dcb_runs
CREATE OR REPLACE VIEW dcb_steps AS
WITH steps AS (
    SELECT
        c.run_id, c.trace_id, c.task_id, c.model, r.suite,
        CAST(c.payload ->> '$.step' AS INTEGER) AS step,
        coalesce(c.payload ->> '$.tool_calls[*].name', []) AS tool_names,
        coalesce(json_extract(c.payload, '$.tool_calls[*].arguments')::VARCHAR, '') AS arguments,
        coalesce(c.payload ->> '$.content', '') AS content,
        coalesce(c.prompt_tokens, TRY_CAST(c.payload ->> '$.prompt_chars' AS BIGINT) // 4) AS prompt_tokens,
        c.completion_tokens,
        c.cost_usd
    FROM llm_calls AS c
    JOIN dcb_runs AS r USING (run_id)
    WHERE c.agent IN ('orchestrator', 'agent') AND c.payload ->> '$.step' IS NOT NULL
)
SELECT
    *,
    coalesce(sum(array_length(tool_names)) OVER (
        PARTITION BY run_id, trace_id ORDER BY step ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING
    ), 0) AS prior_tool_calls
FROM steps;
