-- One row per judge verdict: score 1 = pass, 0 = fail, with the judge and its votes.
CREATE OR REPLACE VIEW judgments AS
SELECT
    event_id, run_id, benchmark, seq, ts, task_id, subtask, agent, model,
    trace_id, span_id, parent_span_id,
    score,
    payload ->> '$.judge' AS judge,
    payload ->> '$.verdict' AS verdict,
    payload -> '$.votes' AS votes,
    payload
FROM events
WHERE kind = 'judgment';
