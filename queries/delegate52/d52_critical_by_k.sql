-- DELEGATE-52 Figure 7: cumulative share (%) of relays with at least one critical error by interaction k.
--
-- Denominator: every relay of the (model, mode, distractors) with a score; a relay that
-- stopped early keeps counting in later k with whatever it had reached.
CREATE OR REPLACE VIEW d52_critical_by_k AS
WITH first_critical AS (
    SELECT run_id, model, mode, distractors, min(k) FILTER (WHERE critical) AS first_k
    FROM d52_round_trip_drops
    GROUP BY run_id, model, mode, distractors
),
ks AS (
    SELECT DISTINCT model, mode, distractors, k FROM d52_round_trip_drops
)
SELECT
    ks.model, ks.mode, ks.distractors, ks.k,
    100.0 * count(*) FILTER (WHERE f.first_k <= ks.k) / count(*) AS pct_runs_with_critical
FROM ks
JOIN first_critical AS f USING (model, mode, distractors)
GROUP BY ks.model, ks.mode, ks.distractors, ks.k;
