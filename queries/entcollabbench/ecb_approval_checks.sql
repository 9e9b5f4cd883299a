-- EntCollabBench: each approval specialist's decision in a subtask against the task file's reference: label, cited rules, missing information.
--
-- The deterministic check of the EntCollabBench paper (docs/entcollabbench.md, "Deterministic approval check"): deterministic_pass = same label AND same set of
-- cited rule ids AND same missing-information flag (the reference flags missing
-- information when its decision is require_docs). decision: the specialist's last parsed
-- `DECISION:` answer in the subtask (NULL when it gave none). judge_passed: the judges'
-- majority verdict, for comparison.
CREATE OR REPLACE VIEW ecb_approval_checks AS
WITH subtasks AS (
    SELECT DISTINCT run_id, task_id, unnest(from_json(json_extract(payload, '$.subtasks'), '["JSON"]')) AS sub
    FROM events
    WHERE benchmark = 'entcollabbench' AND kind = 'registry' AND payload ->> '$.name' = 'ecb_task_spec'
),
refs AS (
    SELECT run_id, task_id, (sub ->> '$.subtask_index')::INTEGER AS subtask_index, sub,
           unnest(json_keys(json_extract(sub, '$.approval_refs'))) AS agent
    FROM subtasks
),
reference AS (
    SELECT run_id, task_id, subtask_index, agent,
           json_extract_string(sub, '$.approval_refs.' || agent || '.decision') AS ref_label,
           list_sort(coalesce(from_json(json_extract(sub, '$.approval_refs.' || agent || '.rule_citations'), '["VARCHAR"]'), [])) AS ref_rules
    FROM refs
),
decisions AS (
    SELECT e.run_id, e.task_id, TRY_CAST(e.subtask AS INTEGER) AS subtask_index, e.agent,
           e.payload ->> '$.label' AS label,
           list_sort(from_json(json_extract(e.payload, '$.rules'), '["VARCHAR"]')) AS rules,
           (e.payload ->> '$.missing_info')::BOOLEAN AS missing_info
    FROM events AS e
    JOIN ecb_attempts AS a ON a.trace_id = e.trace_id
    WHERE e.benchmark = 'entcollabbench' AND e.kind = 'decision'
    QUALIFY row_number() OVER (PARTITION BY e.run_id, e.task_id, e.subtask, e.agent ORDER BY e.seq DESC) = 1
)
SELECT
    f.run_id, t.model, f.task_id, f.subtask_index, f.agent,
    d.label, f.ref_label, d.rules, f.ref_rules,
    d.missing_info, f.ref_label = 'require_docs' AS ref_missing_info,
    d.label = f.ref_label AS label_match,
    d.rules = f.ref_rules AS rules_match,
    coalesce(d.label = f.ref_label AND d.rules = f.ref_rules AND d.missing_info = (f.ref_label = 'require_docs'), false)
        AS deterministic_pass,
    j.passed AS judge_passed
FROM reference AS f
JOIN ecb_tasks AS t ON t.run_id = f.run_id AND t.task_id = f.task_id
LEFT JOIN decisions AS d ON d.run_id = f.run_id AND d.task_id = f.task_id AND d.subtask_index = f.subtask_index AND d.agent = f.agent
LEFT JOIN ecb_agent_judgments AS j
    ON j.run_id = f.run_id AND j.task_id = f.task_id AND j.subtask_index = f.subtask_index AND j.agent = f.agent;
