-- Inspect AI: one row per sample x epoch x scorer: the score as Inspect's metrics read it, and the answer scored.
--
-- value: Inspect's value_to_float of the raw score (C 1, P 0.5, I and N 0, numbers as they
-- are, so outside [0, 1] where the scorer says so); NULL for a NaN (`Score.unscored()`) or
-- infinite value, whose raw value stays in the event's payload. A dict-valued score is one
-- row per key, its scorer named `scorer/key`, as Inspect's results name it. A sample that
-- errored before scoring has no rows. Scores are the sample's final ones (after edits);
-- intermediate scores taken during the run are not rows. answer: the Score's answer, NULL
-- when the scorer gave none.
CREATE OR REPLACE VIEW inspect_scores AS
SELECT
    s.run_id,
    a.attrs ->> '$.task' AS task,
    a.attrs ->> '$.model' AS model,
    s.task_id AS sample_id,
    CAST(s.payload ->> '$.epoch' AS INTEGER) AS epoch,
    s.payload ->> '$.scorer' AS scorer,
    s.score AS value,
    s.payload ->> '$.answer' AS answer
FROM events AS s
LEFT JOIN run_attributes AS a USING (run_id)
WHERE s.benchmark = 'inspect' AND s.kind = 'score' AND s.payload ->> '$.level' = 'sample';
