-- One row per judgment event, corrected ones included (the history): benchmark judges' verdicts and rubric judgments and labels.
--
-- Two families of judgment share this view:
--   * a benchmark's own judge (EntCollabBench's three-model vote, BFCL's checker): `score`
--     1 = pass, 0 = fail, with `judge`, `verdict` and `votes` from the log;
--   * rubric judgments (`tracewh judge`, an LLM rater) and labels (`tracewh label`, a human
--     rater), stored in the `judging` benchmark: `rubric`, `target_id` (what was judged, with
--     the target's run, task and model), `rater`, `rater_kind` (llm or human), `label` or
--     `value` (a number on the rubric's scale), `reference`, `reason`, and `valid` (false:
--     the rater's answer was outside the label set or scale, or not JSON; `raw` keeps it).
-- Unlike every other view this one reads `events_raw`: a label corrected by a later one
-- (`supersedes`) stays here with `superseded = true`, so who changed what, and when, stays
-- queryable. `labels` reads the current ones.
-- tracewh: materialize by run_id
CREATE OR REPLACE VIEW judgments AS
SELECT
    event_id, run_id, benchmark, seq, ts, task_id, subtask, agent, model,
    trace_id, span_id, parent_span_id,
    score, prompt_tokens, completion_tokens, cost_usd, latency_s,
    payload ->> '$.judge' AS judge,
    payload ->> '$.verdict' AS verdict,
    payload -> '$.votes' AS votes,
    payload ->> '$.rubric' AS rubric,
    TRY_CAST(payload ->> '$.rubric_version' AS VARCHAR) AS rubric_version,
    payload ->> '$.rubric_digest' AS rubric_digest,
    payload ->> '$.target_id' AS target_id,
    payload ->> '$.target_run_id' AS target_run_id,
    payload ->> '$.target_task_id' AS target_task_id,
    payload ->> '$.target_model' AS target_model,
    coalesce(payload ->> '$.rater', payload ->> '$.judge') AS rater,
    payload ->> '$.rater_kind' AS rater_kind,
    payload ->> '$.label' AS label,
    TRY_CAST(payload ->> '$.value' AS DOUBLE) AS value,
    payload ->> '$.reference' AS reference,
    payload ->> '$.reason' AS reason,
    payload ->> '$.note' AS note,
    coalesce(TRY_CAST(payload ->> '$.valid' AS BOOLEAN), true) AS valid,
    supersedes,
    event_id IN (SELECT supersedes FROM events_raw WHERE supersedes IS NOT NULL) AS superseded,
    payload
FROM events_raw
WHERE kind = 'judgment';
