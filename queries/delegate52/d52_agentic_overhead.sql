-- DELEGATE-52 Table 4: agentic vs direct runs of the same model: tool calls, overhead ratios, edit method, distractor reads.
--
-- A task is one interaction. Ratios are agentic mean / direct mean per interaction (same
-- model and distractor setting; only models run both ways appear). Edit method over
-- agentic tasks: run_python but no write_file (code), write_file but no run_python
-- (write), both, neither. pct_distractor_read = distinct distractor files read / distractor
-- files offered, over agentic tasks with distractors whose environment is in the ingested
-- dataset (NULL without the dataset: the relay log does not name the files offered).
-- cost_ratio: NULL when any interaction of either side has no cost (an unpriced model):
-- a mean over the priced interactions alone is not the side's mean.
CREATE OR REPLACE VIEW d52_agentic_overhead AS
WITH tasks AS (
    SELECT
        i.*,
        list_contains(operations, 'run_python') AS used_code,
        list_contains(operations, 'write_file') AS used_write,
        e.distractor_files AS offered,
        list_transform(files_read, lambda f: regexp_replace(f, '^.*/', '')) AS read_names
    FROM d52_interactions AS i
    LEFT JOIN d52_environments AS e USING (env_id)
),
agentic AS (
    SELECT
        model, distractors,
        count(*) AS n_tasks,
        avg(coalesce(n_tool_calls, 0)) AS tools_per_task,
        avg(prompt_tokens) AS input_tokens, avg(completion_tokens) AS output_tokens,
        CASE WHEN count(cost_usd) = count(*) THEN avg(cost_usd) END AS cost, avg(latency_s) AS latency,
        100.0 * count(*) FILTER (WHERE used_code AND NOT used_write) / count(*) AS pct_code,
        100.0 * count(*) FILTER (WHERE used_write AND NOT used_code) / count(*) AS pct_write,
        100.0 * count(*) FILTER (WHERE used_code AND used_write) / count(*) AS pct_both,
        100.0 * count(*) FILTER (WHERE NOT used_code AND NOT used_write) / count(*) AS pct_neither,
        100.0 * sum(array_length(list_intersect(list_distinct(read_names), offered))) FILTER (WHERE distractors AND offered IS NOT NULL)
            / nullif(sum(array_length(offered)) FILTER (WHERE distractors AND offered IS NOT NULL), 0) AS pct_distractor_read
    FROM tasks
    WHERE mode = 'agentic'
    GROUP BY model, distractors
),
direct AS (
    SELECT
        model, distractors,
        avg(prompt_tokens) AS input_tokens, avg(completion_tokens) AS output_tokens,
        CASE WHEN count(cost_usd) = count(*) THEN avg(cost_usd) END AS cost, avg(latency_s) AS latency
    FROM tasks
    WHERE mode = 'direct'
    GROUP BY model, distractors
)
SELECT
    a.model, a.distractors, a.n_tasks, a.tools_per_task,
    a.input_tokens / nullif(d.input_tokens, 0) AS input_ratio,
    a.output_tokens / nullif(d.output_tokens, 0) AS output_ratio,
    a.cost / nullif(d.cost, 0) AS cost_ratio,
    a.latency / nullif(d.latency, 0) AS latency_ratio,
    a.pct_code, a.pct_write, a.pct_both, a.pct_neither,
    a.pct_distractor_read
FROM agentic AS a
JOIN direct AS d USING (model, distractors);
