-- DELEGATE-52 deletion vs corruption: shares (%) of total degradation from lost elements and from damaged ones.
--
-- Per score with n_ref > 0 and n_gen known: coverage = min(n_gen / n_ref, 1),
-- deletion = 1 - coverage, corruption = coverage - score (so deletion + corruption = 1 - score;
-- corruption can be negative when a score exceeds coverage). Shares are pooled sums over
-- a model's scores; NULL when nothing degraded.
CREATE OR REPLACE VIEW d52_deletion_corruption AS
WITH parts AS (
    SELECT
        model, mode, distractors, score,
        least(n_gen / n_ref, 1.0) AS coverage
    FROM d52_scores
    WHERE n_ref > 0 AND n_gen IS NOT NULL
)
SELECT
    model, mode, distractors,
    count(*) AS n_scores,
    100 * sum(1 - coverage) / nullif(sum(1 - score), 0) AS deletion_pct,
    100 * sum(coverage - score) / nullif(sum(1 - score), 0) AS corruption_pct
FROM parts
GROUP BY model, mode, distractors;
