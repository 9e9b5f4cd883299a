-- One row per request to a model: tokens, cost, latency and why it stopped.
--
-- total_tokens = prompt + completion (reasoning tokens are part of completion for
-- providers that bill them so; they are also shown apart). agent: the call's own, else the
-- agent whose span encloses it (span_agents).
CREATE OR REPLACE VIEW llm_calls AS
SELECT
    event_id, run_id, benchmark, seq, ts, task_id, subtask, coalesce(events.agent, a.agent) AS agent, model,
    trace_id, span_id, parent_span_id,
    prompt_tokens, completion_tokens, reasoning_tokens, cached_tokens,
    coalesce(prompt_tokens, 0) + coalesce(completion_tokens, 0) AS total_tokens,
    cost_usd, latency_s, finish_reason,
    payload ->> '$.provider' AS provider,
    payload ->> '$.error' AS error,
    payload
FROM events
LEFT JOIN (SELECT event_id, agent FROM span_agents) AS a USING (event_id)
WHERE kind = 'llm_call';
