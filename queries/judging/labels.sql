-- The current label per rubric, target and rater (LLM judge or human), with how many earlier labels it replaced.
--
-- A rater's later label on the same target and rubric replaces the earlier one: a human's
-- by `supersedes` (written by `tracewh label`), a judge's when it is asked again under a
-- new rubric version. The latest valid label wins (by time, then sequence); `revisions`
-- counts the rater's earlier labels of that target. Invalid answers (outside the label set
-- or scale, not JSON) are no label: `judge_costs` counts them.
-- `label` is set for rubrics with a label set, `value` for rubrics with a numeric scale.
CREATE OR REPLACE VIEW labels AS
WITH rated AS (
    SELECT *,
        count(*) OVER (PARTITION BY rubric, target_id, rater) - 1 AS revisions
    FROM judgments
    WHERE rubric IS NOT NULL AND target_id IS NOT NULL AND rater IS NOT NULL
)
SELECT
    rubric, target_id,
    target_run_id AS run_id, target_task_id AS task_id, target_model AS model,
    rater, rater_kind, label, value, reference, reason, note, ts, event_id, revisions
FROM rated
WHERE valid AND NOT superseded
QUALIFY row_number() OVER (PARTITION BY rubric, target_id, rater ORDER BY ts DESC NULLS LAST, seq DESC, event_id DESC) = 1;
