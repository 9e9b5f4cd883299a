-- DELEGATE-52: one row per relay interaction (LLM edit), with tokens, cost, latency and, for agentic runs, tool use.
--
-- operations: the agentic tool names in order; files_read: names passed to read_file
-- (both empty lists on direct runs). Single-edit QA logs are not relay interactions.
CREATE OR REPLACE VIEW d52_interactions AS
SELECT
    run_id,
    model,
    payload ->> '$.mode' AS mode,
    CAST(payload ->> '$.distractors' AS BOOLEAN) AS distractors,
    payload ->> '$.domain' AS domain,
    task_id AS env_id,
    subtask AS edit_id,
    CAST(payload ->> '$.k' AS INTEGER) AS k,
    CAST(payload ->> '$.round_trip' AS INTEGER) AS round_trip,
    payload ->> '$.direction' AS direction,
    prompt_tokens,
    completion_tokens,
    reasoning_tokens,
    cost_usd,
    latency_s,
    TRY_CAST(payload ->> '$.agentic.n_tool_calls' AS INTEGER) AS n_tool_calls,
    coalesce(payload ->> '$.agentic.operations[*]', []) AS operations,
    coalesce(payload ->> '$.agentic.files_read[*]', []) AS files_read,
    TRY_CAST(payload ->> '$.agentic.finished_cleanly' AS BOOLEAN) AS finished_cleanly
FROM llm_calls
WHERE benchmark = 'delegate52' AND payload ->> '$.harness' = 'relay';
