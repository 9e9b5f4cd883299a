-- The agent an event acts for when it names none itself: the receiving agent of its nearest enclosing delegation.
--
-- A span's agent is its own, else its nearest enclosing agent span's (as Phoenix and Langfuse
-- show OpenTelemetry traces): the GenAI conventions name the agent once, on the invoke_agent
-- span (`gen_ai.agent.name`, the delegation's to_agent), and the model and tool spans inside
-- it carry none. Those spans usually arrive before their agent span (SDKs export children
-- first, in other requests), so the agent is found here, at query time, not at ingest. For a
-- delegation without `agent`, the same walk gives who delegates: the agent whose span
-- encloses it. Ancestors are followed through parent_span_id within the run and trace (a
-- span id names a span within its trace; events without a trace id are one trace of their
-- run), across spans of any kind, at most 64 levels up (a cycle in malformed input ends
-- there). Events that name their agent, or sit under no delegation naming its agent, have no
-- row. llm_calls, tool_calls and delegations read it (run_id, trace_id: the event's, so a
-- commit recomputes the rows of the traces it touched only, however long their runs).
-- tracewh: materialize by trace_id (read by the typed views on every query)
CREATE OR REPLACE VIEW span_agents AS
WITH RECURSIVE
-- computed once: inlined, the walk's every step grouped all the spans again (3x the time)
spans AS MATERIALIZED (
    SELECT
        run_id, trace_id, span_id,
        any_value(parent_span_id) AS parent_span_id,
        any_value(payload ->> '$.to_agent') FILTER (WHERE kind = 'delegation') AS to_agent
    FROM events
    WHERE span_id IS NOT NULL
    GROUP BY run_id, trace_id, span_id
),
walk(event_id, run_id, trace_id, ancestor, agent, depth) AS (
    SELECT event_id, run_id, trace_id, parent_span_id, NULL::VARCHAR, 0
    FROM events
    WHERE agent IS NULL AND parent_span_id IS NOT NULL AND kind IN ('llm_call', 'tool_call', 'delegation')
    UNION ALL
    SELECT w.event_id, w.run_id, w.trace_id, s.parent_span_id, s.to_agent, w.depth + 1
    FROM walk AS w
    JOIN spans AS s
        ON s.run_id = w.run_id AND s.trace_id IS NOT DISTINCT FROM w.trace_id AND s.span_id = w.ancestor
    WHERE w.agent IS NULL AND w.depth < 64
)
SELECT event_id, any_value(run_id) AS run_id, any_value(trace_id) AS trace_id, any_value(agent) AS agent
FROM walk
WHERE agent IS NOT NULL
GROUP BY event_id;
