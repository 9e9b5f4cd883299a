-- Per rubric and LLM judge, how often the judge's label matches the humans' majority label: agreement and Cohen's kappa.
--
-- The humans' majority is taken over the current human labels of a target (`labels` with
-- rater_kind = 'human'); targets where the humans tie, or no human labelled, are left out.
-- `n` counts the targets with both a human majority and a label of the judge.
-- cohen_kappa as in `label_agreement` (NULL when chance agreement is 1).
CREATE OR REPLACE VIEW judge_vs_human AS
WITH human_votes AS (
    SELECT rubric, target_id, label, count(*) AS votes
    FROM labels
    WHERE rater_kind = 'human' AND label IS NOT NULL
    GROUP BY ALL
),
human AS (
    SELECT rubric, target_id, label
    FROM human_votes
    QUALIFY votes = max(votes) OVER (PARTITION BY rubric, target_id)
        AND count(*) OVER (PARTITION BY rubric, target_id, votes) = 1
),
pairs AS (
    SELECT j.rubric, j.rater AS judge, j.label AS judge_label, h.label AS human_label
    FROM labels j JOIN human h USING (rubric, target_id)
    WHERE j.rater_kind = 'llm' AND j.label IS NOT NULL
),
observed AS (
    SELECT rubric, judge, count(*) AS n, avg((judge_label = human_label)::INT) AS agreement
    FROM pairs
    GROUP BY ALL
),
chance AS (
    SELECT rubric, judge, sum(n_j * n_h) / (any_value(n) ^ 2) AS p_e
    FROM (
        SELECT rubric, judge, label,
            count(*) FILTER (WHERE side = 'judge') AS n_j,
            count(*) FILTER (WHERE side = 'human') AS n_h,
            any_value(n) AS n
        FROM (
            SELECT rubric, judge, judge_label AS label, 'judge' AS side FROM pairs
            UNION ALL
            SELECT rubric, judge, human_label, 'human' FROM pairs
        ) JOIN observed USING (rubric, judge)
        GROUP BY ALL
    )
    GROUP BY ALL
)
SELECT o.rubric, o.judge, o.n, o.agreement,
    CASE WHEN c.p_e < 1 THEN (o.agreement - c.p_e) / (1 - c.p_e) END AS cohen_kappa
FROM observed o JOIN chance c USING (rubric, judge);
