-- One row per tool call an agent made, with its arguments, the server that hosts the tool and its error.
--
-- agent: the call's own, else the agent whose span encloses it (span_agents). error: why the
-- call failed, NULL when it did not (or no log says): the call's own `error` (OpenTelemetry's
-- error type or status message; Inspect's error message, else its type), else the error of
-- the `tool_result` that answered it (parent_span_id = the call's span) with status `error`:
-- its `error` (DecisionBench), else its result text (EntCollabBench, whose tools answer
-- "Error: ..."). A failed call that logged no text (Inspect's `failed` alone) is 'error'.
CREATE OR REPLACE VIEW tool_calls AS
WITH failed_results AS (
    SELECT
        run_id,
        parent_span_id AS span_id,
        any_value(coalesce(payload ->> '$.error', payload ->> '$.text', payload ->> '$.result', 'error')) AS error
    FROM events
    WHERE kind = 'tool_result' AND payload ->> '$.status' = 'error' AND parent_span_id IS NOT NULL
    GROUP BY run_id, parent_span_id
)
SELECT
    e.event_id, e.run_id, e.benchmark, e.seq, e.ts, e.task_id, e.subtask, coalesce(e.agent, a.agent) AS agent, e.model,
    e.trace_id, e.span_id, e.parent_span_id,
    e.tool_name,
    e.payload ->> '$.server' AS server,
    e.payload -> '$.arguments' AS arguments,
    e.latency_s,
    coalesce(
        -- an error object's message or type, else the error as given (a text, or the object's JSON)
        e.payload ->> '$.error.message', e.payload ->> '$.error.type', e.payload ->> '$.error',
        r.error,
        CASE WHEN e.payload ->> '$.status' = 'error' OR TRY_CAST(e.payload ->> '$.failed' AS BOOLEAN) THEN 'error' END
    ) AS error,
    e.payload
FROM events AS e
LEFT JOIN (SELECT event_id, agent FROM span_agents) AS a USING (event_id)
LEFT JOIN failed_results AS r ON r.run_id = e.run_id AND r.span_id = e.span_id
WHERE e.kind = 'tool_call';
