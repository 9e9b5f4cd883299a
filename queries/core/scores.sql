-- One row per item score: a metric value in [0, 1] for a step, task or run of the benchmark.
--
-- Aggregates a log reports about its own items (Inspect's run-level `accuracy`, `stderr`,
-- `mean`: score events with payload.level = 'run') are not item scores, and a mean over
-- this view would mix a standard error into it: they are rows of inspect_metrics instead.
CREATE OR REPLACE VIEW scores AS
SELECT
    event_id, run_id, benchmark, seq, ts, task_id, subtask, agent, model,
    trace_id, span_id, parent_span_id,
    score,
    payload ->> '$.metric' AS metric,
    payload ->> '$.error' AS error,
    payload
FROM events
WHERE kind = 'score' AND payload ->> '$.level' IS DISTINCT FROM 'run';
