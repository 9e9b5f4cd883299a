-- EntCollabBench: one row per task (latest attempt): subset, single/multi, subtasks, pass, tokens.
--
-- subset (workflow | approval) and multi come from the task file, else are inferred at
-- ingest (approval when every judged agent is an approval specialist; multi when the task
-- has more than one subtask); `ingest --attr subset=… --attr multi=…` overrides both.
-- tokens: input + output tokens of the attempt's LLM calls (llm_response_meta, the only
-- token source); without a trajectory, the driver's run_input_tokens + run_output_tokens.
-- tracewh: materialize by run_id within ecb_runs
CREATE OR REPLACE VIEW ecb_tasks AS
WITH llm_tokens AS (
    SELECT trace_id, sum(coalesce(prompt_tokens, 0) + coalesce(completion_tokens, 0)) AS tokens
    FROM events
    WHERE benchmark = 'entcollabbench' AND kind = 'llm_call'
    GROUP BY trace_id
)
SELECT
    a.run_id,
    r.model,
    a.task_id,
    a.payload ->> '$.subset' AS subset,
    (a.payload ->> '$.multi')::BOOLEAN AS multi,
    (a.payload ->> '$.n_subtasks')::INTEGER AS n_subtasks,
    (a.payload ->> '$.passed')::BOOLEAN AS passed,
    coalesce(
        l.tokens,
        TRY_CAST(a.payload ->> '$.run_tokens.input' AS BIGINT) + TRY_CAST(a.payload ->> '$.run_tokens.output' AS BIGINT),
        TRY_CAST(a.payload ->> '$.run_tokens.total' AS BIGINT)
    )::BIGINT AS tokens,
    a.trace_id
FROM ecb_attempts AS a
JOIN ecb_runs AS r USING (run_id)
LEFT JOIN llm_tokens AS l USING (trace_id);
