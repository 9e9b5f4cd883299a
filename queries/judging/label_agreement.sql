-- Per rubric and pair of raters, how often they agree on the targets both rated: share equal, Cohen's kappa, Spearman's rho.
--
-- Over current labels (`labels`); a pair is listed once, rater_a < rater_b, when the two
-- share at least one target; `n` counts those targets.
--   agreement    share of common targets given the same label (scale rubrics: the same value);
--   cohen_kappa  label rubrics: (p_o - p_e) / (1 - p_e), p_e from each rater's own label
--                shares over the common targets (as scikit-learn's cohen_kappa_score);
--                NULL when p_e = 1 (both gave one label throughout: kappa is undefined);
--   spearman     scale rubrics: Pearson's r of the values' ranks, ties given their average
--                rank (as scipy.stats.spearmanr); NULL when either rater's values are all equal.
CREATE OR REPLACE VIEW label_agreement AS
WITH pairs AS (
    SELECT a.rubric, a.rater AS rater_a, b.rater AS rater_b, a.target_id,
        a.label AS label_a, b.label AS label_b, a.value AS value_a, b.value AS value_b
    FROM labels a
    JOIN labels b ON a.rubric = b.rubric AND a.target_id = b.target_id AND a.rater < b.rater
),
observed AS (
    SELECT rubric, rater_a, rater_b, count(*) AS n,
        avg(CASE WHEN label_a IS NOT NULL AND label_b IS NOT NULL THEN (label_a = label_b)::INT
                 ELSE (value_a = value_b)::INT END) AS agreement,
        count(*) FILTER (WHERE label_a IS NOT NULL AND label_b IS NOT NULL) AS n_labelled,
        avg((label_a = label_b)::INT) FILTER (WHERE label_a IS NOT NULL AND label_b IS NOT NULL) AS p_o
    FROM pairs
    GROUP BY ALL
),
shares AS (  -- how often each rater gave each label, over the pair's common labelled targets
    SELECT rubric, rater_a, rater_b, label, sum(by_a) AS n_a, sum(by_b) AS n_b
    FROM (
        SELECT rubric, rater_a, rater_b, label_a AS label, 1 AS by_a, 0 AS by_b
        FROM pairs WHERE label_a IS NOT NULL AND label_b IS NOT NULL
        UNION ALL
        SELECT rubric, rater_a, rater_b, label_b, 0, 1
        FROM pairs WHERE label_a IS NOT NULL AND label_b IS NOT NULL
    )
    GROUP BY ALL
),
chance AS (
    SELECT s.rubric, s.rater_a, s.rater_b, sum(s.n_a * s.n_b) / (any_value(o.n_labelled) ^ 2) AS p_e
    FROM shares s JOIN observed o USING (rubric, rater_a, rater_b)
    GROUP BY ALL
),
ranked AS (  -- average ranks of the values, per pair
    SELECT rubric, rater_a, rater_b,
        rank() OVER (PARTITION BY rubric, rater_a, rater_b ORDER BY value_a)
            + (count(*) OVER (PARTITION BY rubric, rater_a, rater_b, value_a) - 1) / 2 AS rank_a,
        rank() OVER (PARTITION BY rubric, rater_a, rater_b ORDER BY value_b)
            + (count(*) OVER (PARTITION BY rubric, rater_a, rater_b, value_b) - 1) / 2 AS rank_b
    FROM pairs
    WHERE value_a IS NOT NULL AND value_b IS NOT NULL
),
rho AS (
    SELECT rubric, rater_a, rater_b,
        CASE WHEN var_pop(rank_a) > 0 AND var_pop(rank_b) > 0 THEN corr(rank_a, rank_b) END AS spearman
    FROM ranked
    GROUP BY ALL
)
SELECT
    o.rubric, o.rater_a, o.rater_b, o.n, o.agreement,
    CASE WHEN c.p_e < 1 THEN (o.p_o - c.p_e) / (1 - c.p_e) END AS cohen_kappa,
    r.spearman
FROM observed o
LEFT JOIN chance c USING (rubric, rater_a, rater_b)
LEFT JOIN rho r USING (rubric, rater_a, rater_b);
