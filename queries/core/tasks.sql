-- One row per task of a run: events, calls, tokens, cost, time span and the task's final score.
--
-- score: the task's last task-level score (a score event without a subtask, by seq), else
-- its last score of any level: DecisionBench `quality`, EntCollabBench `task_pass` (not the
-- subtasks'), DELEGATE-52 the reconstruction score after the relay's last round trip. Events
-- without a task (run attributes, registries) belong to none. Cost counts LLM calls only and
-- the time span leaves out run_attrs events, as in `runs`.
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
    coalesce(sum(prompt_tokens), 0)::BIGINT AS prompt_tokens,
    coalesce(sum(completion_tokens), 0)::BIGINT AS completion_tokens,
    coalesce(sum(prompt_tokens), 0)::BIGINT + coalesce(sum(completion_tokens), 0)::BIGINT AS total_tokens,
    coalesce(sum(cost_usd) FILTER (WHERE kind = 'llm_call'), 0) AS cost_usd,
    min(ts) FILTER (WHERE kind <> 'run_attrs') AS first_ts,
    max(ts) FILTER (WHERE kind <> 'run_attrs') AS last_ts,
    coalesce(
        arg_max(score, seq) FILTER (WHERE kind = 'score' AND subtask IS NULL AND score IS NOT NULL),
        arg_max(score, seq) FILTER (WHERE kind = 'score' AND score IS NOT NULL)
    ) AS score
FROM events
WHERE task_id IS NOT NULL
GROUP BY run_id, task_id;
