-- One row per task of a run: events, calls, tokens, cost, time span and the task's final score.
--
-- score: the task's last task-level score (a score event without a subtask, by seq), else
-- its last score of any level: DecisionBench `quality`, EntCollabBench `task_pass` (not the
-- subtasks'), DELEGATE-52 the reconstruction score after the relay's last round trip. Events
-- without a task (run attributes, registries) belong to none. Cost counts LLM calls only and
-- the time span leaves out run_attrs events, as in `runs`: cost_usd is NULL when any of the
-- task's LLM calls has no cost, never a partial sum (unpriced_calls counts them).
CREATE OR REPLACE VIEW tasks AS
SELECT
    run_id,
    task_id,
    any_value(benchmark) AS benchmark,
    min(seq) AS first_seq,
    count(*) AS n_events,
    count(*) FILTER (WHERE kind = 'llm_call') AS n_llm_calls,
    count(*) FILTER (WHERE kind = 'tool_call') AS n_tool_calls,
    count(*) FILTER (WHERE kind = 'delegation') AS n_delegations,
    -- token counts likewise: NULL when any LLM call logged none, never a partial sum
    CASE WHEN count(*) FILTER (WHERE kind = 'llm_call' AND prompt_tokens IS NULL) = 0
         THEN coalesce(sum(prompt_tokens), 0)::BIGINT END AS prompt_tokens,
    CASE WHEN count(*) FILTER (WHERE kind = 'llm_call' AND completion_tokens IS NULL) = 0
         THEN coalesce(sum(completion_tokens), 0)::BIGINT END AS completion_tokens,
    CASE WHEN count(*) FILTER (WHERE kind = 'llm_call' AND (prompt_tokens IS NULL OR completion_tokens IS NULL)) = 0
         THEN coalesce(sum(prompt_tokens), 0)::BIGINT + coalesce(sum(completion_tokens), 0)::BIGINT END AS total_tokens,
    CASE WHEN count(*) FILTER (WHERE kind = 'llm_call' AND cost_usd IS NULL) = 0
         THEN coalesce(sum(cost_usd) FILTER (WHERE kind = 'llm_call'), 0) END AS cost_usd,
    count(*) FILTER (WHERE kind = 'llm_call' AND cost_usd IS NULL) AS unpriced_calls,
    min(ts) FILTER (WHERE kind <> 'run_attrs') AS first_ts,
    max(ts) FILTER (WHERE kind <> 'run_attrs') AS last_ts,
    coalesce(
        arg_max(score, seq) FILTER (WHERE kind = 'score' AND subtask IS NULL AND score IS NOT NULL),
        arg_max(score, seq) FILTER (WHERE kind = 'score' AND score IS NOT NULL)
    ) AS score
FROM events
WHERE task_id IS NOT NULL
GROUP BY run_id, task_id;
