-- One row per score: a metric value in [0, 1] for a step, task or run.
CREATE OR REPLACE VIEW scores AS
SELECT
    event_id, run_id, benchmark, seq, ts, task_id, subtask, agent, model,
    trace_id, span_id, parent_span_id,
    score,
    payload ->> '$.metric' AS metric,
    payload ->> '$.error' AS error,
    payload
FROM events
WHERE kind = 'score';
