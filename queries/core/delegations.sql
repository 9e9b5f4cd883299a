-- One row per hand-off of work from one agent or model to another.
--
-- `agent`/`model` delegate; `to_agent`/`to_model` receive. The receiver's own events
-- carry parent_span_id = this row's span_id, so they roll up to the delegation. `agent`: the
-- delegation's own, else the receiving agent of the delegation enclosing it (span_agents:
-- an OpenTelemetry invoke_agent span names only the agent it invokes).
-- tracewh: by run_id
CREATE OR REPLACE VIEW delegations AS
SELECT
    event_id, run_id, benchmark, seq, ts, task_id, subtask, coalesce(events.agent, a.agent) AS agent, model,
    trace_id, span_id, parent_span_id,
    payload ->> '$.to_agent' AS to_agent,
    payload ->> '$.to_model' AS to_model,
    TRY_CAST(payload ->> '$.depth' AS INTEGER) AS depth,
    payload ->> '$.status' AS status,
    cost_usd, latency_s,
    payload
FROM events
LEFT JOIN (SELECT event_id, agent FROM span_agents) AS a USING (event_id)
WHERE kind = 'delegation';
