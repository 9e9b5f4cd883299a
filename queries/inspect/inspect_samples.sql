-- Inspect AI: one row per sample x epoch of an eval log: its LLM calls, tool calls, tokens and error.
--
-- Inputs are what the inspect adapter writes (docs/formats/inspect.md §11): events with
-- task_id = the sample id (VARCHAR: Inspect's ids are ints or strings, compared as text) and
-- payload.epoch. A sample is counted as Inspect's own sample record counts it: the final
-- attempt only. Calls kept from attempts that failed and were retried (payload.retry) are in
-- llm_calls and runs, not here. llm_calls counts every model call of the sample, scorers'
-- calls (a model-graded scorer's grader) included, as the sample's model_usage does.
-- prompt_tokens: all input tokens, cache reads and writes included (the llm_calls'
-- prompt_tokens; not Inspect's `input_tokens`, which leaves both out, hence not its name);
-- cached_tokens: of those, cache reads (Inspect's input_tokens_cache_read); output_tokens:
-- completion tokens (Inspect's output_tokens).
-- error: the sample's error message (a cancelled sample's is `CancelledError(...)`), else NULL.
-- task and model: the eval's, from the run's attributes.
CREATE OR REPLACE VIEW inspect_samples AS
WITH samples AS (
    SELECT
        run_id,
        task_id AS sample_id,
        CAST(payload ->> '$.epoch' AS INTEGER) AS epoch,
        count(*) FILTER (WHERE kind = 'llm_call') AS llm_calls,
        count(*) FILTER (WHERE kind = 'tool_call') AS tool_calls,
        coalesce(sum(prompt_tokens) FILTER (WHERE kind = 'llm_call'), 0)::BIGINT AS prompt_tokens,
        coalesce(sum(cached_tokens) FILTER (WHERE kind = 'llm_call'), 0)::BIGINT AS cached_tokens,
        coalesce(sum(completion_tokens) FILTER (WHERE kind = 'llm_call'), 0)::BIGINT AS output_tokens,
        any_value(payload ->> '$.message') FILTER (WHERE kind = 'error') AS error
    FROM events
    WHERE benchmark = 'inspect' AND task_id IS NOT NULL AND payload ->> '$.retry' IS NULL
    GROUP BY run_id, task_id, CAST(payload ->> '$.epoch' AS INTEGER)
)
SELECT
    s.run_id,
    a.attrs ->> '$.task' AS task,
    a.attrs ->> '$.model' AS model,
    s.sample_id, s.epoch, s.llm_calls, s.tool_calls, s.prompt_tokens, s.cached_tokens, s.output_tokens, s.error
FROM samples AS s
LEFT JOIN run_attributes AS a USING (run_id);
