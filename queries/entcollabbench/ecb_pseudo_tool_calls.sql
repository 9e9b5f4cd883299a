-- EntCollabBench: model turns that imitate a tool call in text: no tool_calls, finish_reason stop,
-- and text that looks like one (<…:tool_call>, <invoke …>, ask_…_by_http(…), mcp_…_call_tool(…),
-- or a JSON object naming such a tool). excerpt: the matching text with up to 60 characters around it.
CREATE OR REPLACE VIEW ecb_pseudo_tool_calls AS
WITH turns AS (
    SELECT l.run_id, l.task_id, l.subtask, l.agent, l.seq, l.payload ->> '$.content' AS content
    FROM llm_calls AS l
    JOIN ecb_attempts AS a ON a.trace_id = l.trace_id
    WHERE l.benchmark = 'entcollabbench'
      AND l.finish_reason = 'stop'
      AND coalesce(TRY_CAST(l.payload ->> '$.n_tool_calls' AS INTEGER), 0) = 0
)
SELECT
    t.run_id, r.model, t.task_id, TRY_CAST(t.subtask AS INTEGER) AS subtask_index, t.agent,
    regexp_extract(t.content, '(?s).{0,60}(?:' || p.pattern || ').{0,60}', 0) AS excerpt
FROM turns AS t
CROSS JOIN (SELECT '<[a-z_]*:?tool_call>|<invoke\b|<function_call>|\b(?:ask_[a-z_]+_by_http|mcp_[a-z0-9]+_(?:call_tool|list_tools|get_tool_schema|call_knowledge_tool)|tool_workspace_[a-z_]+)\s*\(|"(?:name|tool_name|tool)"\s*:\s*"(?:ask_|mcp_|tool_workspace_)' AS pattern) AS p
JOIN ecb_runs AS r ON r.run_id = t.run_id
WHERE regexp_matches(t.content, p.pattern)
ORDER BY t.run_id, t.task_id, t.seq;
