-- What runs and tasks total, per trace: counts, tokens, cost, time span and scores of each (run, trace, task, LLM model).
--
-- A building block, not a headline: `tasks` and `runs` add its rows up. Kept per trace so that
-- a commit into a long run recomputes the rows of the traces it touched only, not the run
-- (issue #34: a run at 1,000 spans a second cost every commit its whole history). llm_model:
-- the model of the part's LLM calls (NULL for its other events), so that `runs` can find the
-- model of most calls. The token and cost columns are sums over the part's events, with counts
-- of the LLM calls that lack them, so a total can still be NULL rather than partial. top_score
-- (at top_seq): the part's last task-level score (no subtask); any_score (at any_seq): its last
-- score of any level.
-- tracewh: materialize by trace_id
CREATE OR REPLACE VIEW run_parts AS
SELECT
    run_id,
    trace_id,
    task_id,
    CASE WHEN kind = 'llm_call' THEN model END AS llm_model,
    any_value(benchmark) AS benchmark,
    min(seq) AS first_seq,
    count(*) AS n_events,
    count(*) FILTER (WHERE kind = 'llm_call') AS n_llm_calls,
    count(*) FILTER (WHERE kind = 'tool_call') AS n_tool_calls,
    count(*) FILTER (WHERE kind = 'delegation') AS n_delegations,
    count(*) FILTER (WHERE kind NOT IN ('registry', 'run_attrs')) AS n_activity,
    sum(prompt_tokens) AS prompt_tokens,
    sum(completion_tokens) AS completion_tokens,
    sum(reasoning_tokens) AS reasoning_tokens,
    sum(cached_tokens) AS cached_tokens,
    count(*) FILTER (WHERE kind = 'llm_call' AND prompt_tokens IS NULL) AS unprompted_calls,
    count(*) FILTER (WHERE kind = 'llm_call' AND completion_tokens IS NULL) AS uncompleted_calls,
    count(*) FILTER (WHERE kind = 'llm_call' AND (prompt_tokens IS NULL OR completion_tokens IS NULL))
        AS untokened_calls,
    count(*) FILTER (WHERE kind = 'llm_call' AND cost_usd IS NULL) AS unpriced_calls,
    sum(cost_usd) FILTER (WHERE kind = 'llm_call') AS priced_cost,
    min(ts) FILTER (WHERE kind <> 'run_attrs') AS first_ts,
    max(ts) FILTER (WHERE kind <> 'run_attrs') AS last_ts,
    max(seq) FILTER (WHERE kind = 'score' AND subtask IS NULL AND score IS NOT NULL) AS top_seq,
    arg_max(score, seq) FILTER (WHERE kind = 'score' AND subtask IS NULL AND score IS NOT NULL) AS top_score,
    max(seq) FILTER (WHERE kind = 'score' AND score IS NOT NULL) AS any_seq,
    arg_max(score, seq) FILTER (WHERE kind = 'score' AND score IS NOT NULL) AS any_score
FROM events
GROUP BY run_id, trace_id, task_id, llm_model;
