-- Per rubric and rater, agreement with each target's reference (a label or a number the target query supplied).
--
-- `reference` comes from the rubric's target query (for instance DELEGATE-52's parsing-based
-- RS beside an LLM's 0-100 score). Label rubrics: `agreement` is the share of targets whose
-- label equals the reference. Scale rubrics: `pearson` and `spearman` (average ranks for
-- ties) between value and reference, and `r2` = pearson squared, the share of the
-- reference's variance the judge's scores explain in a linear fit. NULL where undefined
-- (fewer than two targets, or no variation). `n` counts targets with both a rating and a reference.
CREATE OR REPLACE VIEW judge_vs_reference AS
WITH pairs AS (
    SELECT rubric, rater AS judge, rater_kind, label, value, reference,
        TRY_CAST(reference AS DOUBLE) AS reference_value
    FROM labels
    WHERE reference IS NOT NULL AND (label IS NOT NULL OR value IS NOT NULL)
),
ranked AS (
    SELECT *,
        rank() OVER (PARTITION BY rubric, judge ORDER BY value)
            + (count(*) OVER (PARTITION BY rubric, judge, value) - 1) / 2 AS rank_v,
        rank() OVER (PARTITION BY rubric, judge ORDER BY reference_value)
            + (count(*) OVER (PARTITION BY rubric, judge, reference_value) - 1) / 2 AS rank_r
    FROM pairs
    WHERE value IS NOT NULL AND reference_value IS NOT NULL
),
scales AS (
    SELECT rubric, judge,
        CASE WHEN var_pop(value) > 0 AND var_pop(reference_value) > 0 THEN corr(value, reference_value) END AS pearson,
        CASE WHEN var_pop(rank_v) > 0 AND var_pop(rank_r) > 0 THEN corr(rank_v, rank_r) END AS spearman
    FROM ranked
    GROUP BY ALL
)
SELECT p.rubric, p.judge, any_value(p.rater_kind) AS rater_kind, count(*) AS n,
    avg((p.label = p.reference)::INT) FILTER (WHERE p.label IS NOT NULL) AS agreement,
    any_value(s.pearson) AS pearson, any_value(s.spearman) AS spearman, any_value(s.pearson) ^ 2 AS r2
FROM pairs p LEFT JOIN scales s USING (rubric, judge)
GROUP BY p.rubric, p.judge;
