-- One row per run: its attributes, totals (events, LLM calls, tokens, cost), first/last time and headline score.
--
-- attrs: see run_attributes. model: the `model` attribute when given, else the model of
-- most LLM calls. score: the run's headline score in [0, 1], the mean over its tasks of each
-- task's final score (see tasks); NULL when no task was scored.
-- cost_usd: the sum over the run's LLM calls; NULL when any call's cost is unknown (a model
-- missing from the price list, a log without usage), never a partial sum; 0 for a run
-- without LLM calls. unpriced_calls: how many LLM calls have no cost (why cost_usd is NULL).
-- prompt_tokens, completion_tokens, total_tokens: likewise NULL when any LLM call logged no
-- token counts (EntCollabBench's trajectories, for one), never a partial sum. reasoning and
-- cached tokens are counted where reported (many providers report none).
-- A "run" of reference data alone (every event a `registry` or `run_attrs` event, e.g. the
-- DELEGATE-52 environment dataset `delegate52-dataset`) is no run and has no row; its
-- events stay in `events` and the views that read them (d52_environments).
-- tracewh: materialize by run_id (a headline view: GET /runs and the web page read it on every request;
-- computing it over every event took ~250 ms per request on the demo store). Added up from
-- run_parts, so a commit into a long run reads its parts, not its events.
CREATE OR REPLACE VIEW runs AS
WITH totals AS (
    SELECT
        run_id,
        any_value(benchmark) AS benchmark,
        count(DISTINCT task_id) AS n_tasks,
        sum(n_events)::BIGINT AS n_events,
        sum(n_llm_calls)::BIGINT AS n_llm_calls,
        sum(n_tool_calls)::BIGINT AS n_tool_calls,
        sum(n_delegations)::BIGINT AS n_delegations,
        coalesce(sum(prompt_tokens), 0)::BIGINT AS prompt_tokens,
        coalesce(sum(completion_tokens), 0)::BIGINT AS completion_tokens,
        coalesce(sum(reasoning_tokens), 0)::BIGINT AS reasoning_tokens,
        coalesce(sum(cached_tokens), 0)::BIGINT AS cached_tokens,
        sum(untokened_calls) AS untokened_calls,
        sum(unpriced_calls)::BIGINT AS unpriced_calls,
        coalesce(sum(priced_cost), 0) AS priced_cost,
        sum(n_activity) AS n_activity,
        min(first_ts) AS first_ts,
        max(last_ts) AS last_ts
    FROM run_parts
    GROUP BY run_id
),
-- the model of most LLM calls (the mode of their models)
llm_models AS (
    SELECT run_id, arg_max(llm_model, n) AS llm_model
    FROM (SELECT run_id, llm_model, sum(n_llm_calls) AS n FROM run_parts WHERE llm_model IS NOT NULL GROUP BY ALL)
    GROUP BY run_id
)
SELECT
    t.run_id,
    t.benchmark,
    coalesce(a.attrs ->> '$.model', m.llm_model) AS model,
    coalesce(a.attrs, '{}'::JSON) AS attrs,
    t.n_events, t.n_tasks, t.n_llm_calls, t.n_tool_calls, t.n_delegations,
    CASE WHEN t.untokened_calls = 0 THEN t.prompt_tokens END AS prompt_tokens,
    CASE WHEN t.untokened_calls = 0 THEN t.completion_tokens END AS completion_tokens,
    t.reasoning_tokens, t.cached_tokens,
    CASE WHEN t.untokened_calls = 0 THEN t.prompt_tokens + t.completion_tokens END AS total_tokens,
    CASE WHEN t.unpriced_calls = 0 THEN t.priced_cost END AS cost_usd,
    t.unpriced_calls,
    t.first_ts, t.last_ts,
    s.score
FROM totals AS t
LEFT JOIN llm_models AS m USING (run_id)
LEFT JOIN run_attributes AS a USING (run_id)
LEFT JOIN (SELECT run_id, avg(score) AS score FROM tasks GROUP BY run_id) AS s USING (run_id)
WHERE t.n_activity > 0;
