-- One row per changed row/field between two environment states (insert, delete or update).
CREATE OR REPLACE VIEW state_diffs AS
SELECT
    event_id, run_id, benchmark, seq, ts, task_id, subtask, agent, model,
    trace_id, span_id, parent_span_id,
    payload ->> '$.service' AS service,
    payload ->> '$.table' AS table_name,
    payload ->> '$.key' AS row_key,
    payload ->> '$.op' AS op,
    payload ->> '$.field' AS field,
    payload -> '$.before' AS before_value,
    payload -> '$.after' AS after_value,
    payload
FROM events
WHERE kind = 'state_diff';
