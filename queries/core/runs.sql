-- One row per run: its attributes, totals (events, LLM calls, tokens, cost), first/last time and headline score.
--
-- attrs: see run_attributes. model: the `model` attribute when given, else the model of
-- most LLM calls. score: the run's headline score in [0, 1], the mean over its tasks of each
-- task's final score (see tasks); NULL when no task was scored.
-- tracewh: materialize (a headline view: GET /runs and the web page read it on every request;
-- computing it over every event took ~250 ms per request on the demo store)
CREATE OR REPLACE VIEW runs AS
WITH totals AS (
    SELECT
        run_id,
        any_value(benchmark) AS benchmark,
        mode(model) FILTER (WHERE kind = 'llm_call') AS llm_model,
        count(*) AS n_events,
        count(DISTINCT task_id) AS n_tasks,
        count(*) FILTER (WHERE kind = 'llm_call') AS n_llm_calls,
        count(*) FILTER (WHERE kind = 'tool_call') AS n_tool_calls,
        count(*) FILTER (WHERE kind = 'delegation') AS n_delegations,
        coalesce(sum(prompt_tokens), 0)::BIGINT AS prompt_tokens,
        coalesce(sum(completion_tokens), 0)::BIGINT AS completion_tokens,
        coalesce(sum(reasoning_tokens), 0)::BIGINT AS reasoning_tokens,
        coalesce(sum(cached_tokens), 0)::BIGINT AS cached_tokens,
        coalesce(sum(cost_usd) FILTER (WHERE kind = 'llm_call'), 0) AS cost_usd,
        min(ts) FILTER (WHERE kind <> 'run_attrs') AS first_ts,
        max(ts) FILTER (WHERE kind <> 'run_attrs') AS last_ts
    FROM events
    GROUP BY run_id
)
SELECT
    t.run_id,
    t.benchmark,
    coalesce(a.attrs ->> '$.model', t.llm_model) AS model,
    coalesce(a.attrs, '{}'::JSON) AS attrs,
    t.n_events, t.n_tasks, t.n_llm_calls, t.n_tool_calls, t.n_delegations,
    t.prompt_tokens, t.completion_tokens, t.reasoning_tokens, t.cached_tokens,
    t.prompt_tokens + t.completion_tokens AS total_tokens,
    t.cost_usd,
    t.first_ts, t.last_ts,
    s.score
FROM totals AS t
LEFT JOIN run_attributes AS a USING (run_id)
LEFT JOIN (SELECT run_id, avg(score) AS score FROM tasks GROUP BY run_id) AS s USING (run_id);
