-- DELEGATE-52 short vs long horizon: Spearman rank correlation across models of RS@2 and the end-of-relay RS.
--
-- Per (mode, distractors): each model's RS@2 and its RS at the largest k it reached (RS@20
-- for full relays); ranks average ties; NULL with fewer than two models.
CREATE OR REPLACE VIEW d52_short_long AS
WITH ends AS (
    SELECT model, mode, distractors, max(k) AS k_end FROM d52_rs_at_k GROUP BY model, mode, distractors
),
pairs AS (
    SELECT s.model, s.mode, s.distractors, s.rs AS rs2, l.rs AS rs_end
    FROM d52_rs_at_k AS s
    JOIN ends AS e USING (model, mode, distractors)
    JOIN d52_rs_at_k AS l
      ON l.model = s.model AND l.mode = s.mode AND l.distractors = s.distractors AND l.k = e.k_end
    WHERE s.k = 2
),
ranked AS (
    SELECT
        mode, distractors,
        rank() OVER (PARTITION BY mode, distractors ORDER BY rs2)
            + (count(*) OVER (PARTITION BY mode, distractors, rs2) - 1) / 2.0 AS rank_short,
        rank() OVER (PARTITION BY mode, distractors ORDER BY rs_end)
            + (count(*) OVER (PARTITION BY mode, distractors, rs_end) - 1) / 2.0 AS rank_long
    FROM pairs
)
SELECT
    mode, distractors,
    count(*) AS n_models,
    CASE WHEN count(*) >= 2 THEN corr(rank_short, rank_long) END AS spearman_rs2_rs_end
FROM ranked
GROUP BY mode, distractors;
