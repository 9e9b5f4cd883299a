-- Per rubric, agreement among all its raters at once: Fleiss' kappa and Krippendorff's alpha.
--
-- Over current labels (`labels`). `raters` counts the rubric's raters, `n_targets` the
-- targets every one of them rated.
--   fleiss_kappa        label rubrics, over the targets every rater rated (Fleiss 1971; as
--                       statsmodels' fleiss_kappa); NULL with fewer than two raters or when
--                       chance agreement is 1 (one label throughout);
--   krippendorff_alpha  over every rating, missing ones allowed: targets with at least two
--                       ratings count, each pair of ratings within a target weighted
--                       1 / (ratings - 1). Nominal distance for label rubrics, interval
--                       (squared difference) for scale rubrics (as the `krippendorff`
--                       package); NULL when the ratings show no variation at all.
CREATE OR REPLACE VIEW rater_agreement AS
WITH rubrics AS (
    SELECT rubric, count(DISTINCT rater) AS raters, bool_or(label IS NOT NULL) AS nominal
    FROM labels
    GROUP BY ALL
),
rating AS (  -- one rating per rubric, target and rater, on the rubric's level of measurement
    SELECT l.rubric, l.target_id, l.rater, r.nominal,
        CASE WHEN r.nominal THEN l.label ELSE CAST(l.value AS VARCHAR) END AS category, l.value
    FROM labels l JOIN rubrics r USING (rubric)
    WHERE CASE WHEN r.nominal THEN l.label IS NOT NULL ELSE l.value IS NOT NULL END
),
complete AS (  -- targets rated by every rater of the rubric
    SELECT t.rubric, t.target_id, r.raters AS m
    FROM rating t JOIN rubrics r USING (rubric)
    GROUP BY t.rubric, t.target_id, r.raters
    HAVING count(*) = r.raters
),
fleiss_cells AS (
    SELECT t.rubric, t.target_id, c.m, t.category, count(*) AS n_ij
    FROM rating t JOIN complete c USING (rubric, target_id)
    WHERE t.nominal
    GROUP BY ALL
),
fleiss_targets AS (
    SELECT rubric, target_id, any_value(m) AS m, (sum(n_ij * n_ij) - any_value(m)) / (any_value(m) * (any_value(m) - 1)) AS p_i
    FROM fleiss_cells
    WHERE m >= 2
    GROUP BY ALL
),
fleiss_categories AS (
    SELECT f.rubric, f.category, sum(f.n_ij) / any_value(t.n * f.m) AS p_j
    FROM fleiss_cells f
    JOIN (SELECT rubric, count(*) AS n FROM fleiss_targets GROUP BY ALL) t USING (rubric)
    WHERE f.m >= 2
    GROUP BY ALL
),
fleiss AS (
    SELECT t.rubric, avg(t.p_i) AS p_bar, any_value(e.p_e) AS p_e
    FROM fleiss_targets t
    JOIN (SELECT rubric, sum(p_j * p_j) AS p_e FROM fleiss_categories GROUP BY ALL) e USING (rubric)
    GROUP BY ALL
),
pairable AS (  -- ratings of targets with at least two of them
    SELECT *, count(*) OVER (PARTITION BY rubric, target_id) AS m
    FROM rating
    QUALIFY count(*) OVER (PARTITION BY rubric, target_id) >= 2
),
observed AS (  -- sum over ordered pairs of ratings within a target of distance / (m - 1)
    SELECT a.rubric,
        sum(CASE WHEN a.nominal THEN (a.category <> b.category)::DOUBLE ELSE (a.value - b.value) ^ 2 END / (a.m - 1)) AS d_o
    FROM pairable a
    JOIN pairable b ON a.rubric = b.rubric AND a.target_id = b.target_id AND a.rater <> b.rater
    GROUP BY ALL
),
expected AS (  -- sum over every ordered pair of pairable ratings of their distance
    SELECT rubric, any_value(n) AS n,
        CASE WHEN any_value(nominal) THEN any_value(n) ^ 2 - sum(n_c * n_c)
             ELSE 2 * (any_value(n) * any_value(sum_sq) - any_value(total) ^ 2) END AS d_e
    FROM (
        SELECT rubric, category, any_value(nominal) AS nominal, count(*) AS n_c,
            sum(count(*)) OVER (PARTITION BY rubric) AS n,
            sum(sum(value * value)) OVER (PARTITION BY rubric) AS sum_sq,
            sum(sum(value)) OVER (PARTITION BY rubric) AS total
        FROM pairable
        GROUP BY rubric, category
    )
    GROUP BY ALL
)
SELECT
    r.rubric, r.raters,
    coalesce((SELECT count(*) FROM complete c WHERE c.rubric = r.rubric), 0) AS n_targets,
    CASE WHEN r.nominal AND f.p_e < 1 THEN (f.p_bar - f.p_e) / (1 - f.p_e) END AS fleiss_kappa,
    CASE WHEN e.d_e > 0 THEN 1 - (e.n - 1) * o.d_o / e.d_e END AS krippendorff_alpha
FROM rubrics r
LEFT JOIN fleiss f USING (rubric)
LEFT JOIN observed o USING (rubric)
LEFT JOIN expected e USING (rubric);
