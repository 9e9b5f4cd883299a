-- EntCollabBench: the attempt of each task that counts: its latest result row.
--
-- A resumed run rewrites result rows; the row with the latest `timestamp` wins, in one
-- archive or across archives. Every event of an attempt carries its trace_id, so the
-- other ecb_ views join on it to read only the winning attempt.
CREATE OR REPLACE VIEW ecb_attempts AS
SELECT run_id, task_id, trace_id, payload
FROM events
WHERE benchmark = 'entcollabbench' AND kind = 'task_finished' AND payload ->> '$.level' = 'task'
QUALIFY row_number() OVER (
    PARTITION BY run_id, task_id
    ORDER BY TRY_CAST(payload ->> '$.result_timestamp' AS TIMESTAMPTZ) DESC NULLS LAST,
             payload ->> '$.result_timestamp' DESC, seq DESC
) = 1;
