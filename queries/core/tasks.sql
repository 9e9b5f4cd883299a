-- One row per task of a run: events, calls, tokens, cost, time span and the task's final score.
--
-- score: the task's last task-level score (a score event without a subtask, by seq), else
-- its last score of any level: DecisionBench `quality`, EntCollabBench `task_pass` (not the
-- subtasks'), DELEGATE-52 the reconstruction score after the relay's last round trip. Events
-- without a task (run attributes, registries) belong to none. Cost counts LLM calls only and
-- the time span leaves out run_attrs events, as in `runs`: cost_usd is NULL when any of the
-- task's LLM calls has no cost, never a partial sum (unpriced_calls counts them).
-- Added up from run_parts (a task's events may span traces).
CREATE OR REPLACE VIEW tasks AS
SELECT
    run_id,
    task_id,
    any_value(benchmark) AS benchmark,
    min(first_seq) AS first_seq,
    sum(n_events)::BIGINT AS n_events,
    sum(n_llm_calls)::BIGINT AS n_llm_calls,
    sum(n_tool_calls)::BIGINT AS n_tool_calls,
    sum(n_delegations)::BIGINT AS n_delegations,
    -- token counts likewise: NULL when any LLM call logged none, never a partial sum
    CASE WHEN sum(unprompted_calls) = 0 THEN coalesce(sum(prompt_tokens), 0)::BIGINT END AS prompt_tokens,
    CASE WHEN sum(uncompleted_calls) = 0 THEN coalesce(sum(completion_tokens), 0)::BIGINT END AS completion_tokens,
    CASE WHEN sum(untokened_calls) = 0
         THEN coalesce(sum(prompt_tokens), 0)::BIGINT + coalesce(sum(completion_tokens), 0)::BIGINT END AS total_tokens,
    CASE WHEN sum(unpriced_calls) = 0 THEN coalesce(sum(priced_cost), 0) END AS cost_usd,
    sum(unpriced_calls)::BIGINT AS unpriced_calls,
    min(first_ts) AS first_ts,
    max(last_ts) AS last_ts,
    coalesce(arg_max(top_score, top_seq), arg_max(any_score, any_seq)) AS score
FROM run_parts
WHERE task_id IS NOT NULL
GROUP BY run_id, task_id;
