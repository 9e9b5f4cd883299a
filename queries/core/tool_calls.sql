-- One row per tool call an agent made, with its arguments and the server that hosts the tool.
CREATE OR REPLACE VIEW tool_calls AS
SELECT
    event_id, run_id, benchmark, seq, ts, task_id, subtask, agent, model,
    trace_id, span_id, parent_span_id,
    tool_name,
    payload ->> '$.server' AS server,
    payload -> '$.arguments' AS arguments,
    latency_s,
    payload
FROM events
WHERE kind = 'tool_call';
