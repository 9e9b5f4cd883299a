-- EntCollabBench: runaway re-reads: one agent reading the same workspace file 5 or more times in one subtask.
CREATE OR REPLACE VIEW ecb_rereads AS
SELECT
    c.run_id, r.model, c.task_id, TRY_CAST(c.subtask AS INTEGER) AS subtask_index, c.agent,
    c.arguments ->> '$.file_path' AS file,
    count(*) AS reads
FROM tool_calls AS c
JOIN ecb_attempts AS a ON a.trace_id = c.trace_id
JOIN ecb_runs AS r ON r.run_id = c.run_id
WHERE c.benchmark = 'entcollabbench' AND c.tool_name = 'tool_workspace_read_file'
GROUP BY ALL
HAVING count(*) >= 5;
