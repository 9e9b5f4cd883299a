-- EntCollabBench: database changes of each task's latest attempt, one row per inserted or deleted row and per changed field of an updated row.
--
-- subtask_index is NULL for changes over the whole task (computed at ingest from raw
-- snapshots, or the driver's batch-level diff when it stored no per-subtask diffs).
-- before/after: JSON (whole rows for insert/delete). row_key: the table's key value
-- (NULL for keyless tables, whose updates read as a delete plus an insert).
CREATE OR REPLACE VIEW ecb_state_changes AS
SELECT
    s.run_id, r.model, s.task_id, TRY_CAST(s.subtask AS INTEGER) AS subtask_index,
    s.service AS server, s.table_name, s.op, s.row_key, s.field,
    s.before_value AS before, s.after_value AS after
FROM state_diffs AS s
JOIN ecb_attempts AS a ON a.trace_id = s.trace_id
JOIN ecb_runs AS r ON r.run_id = s.run_id
WHERE s.benchmark = 'entcollabbench';
