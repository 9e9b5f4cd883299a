-- DELEGATE-52: per relay and round trip, the drop from the previous round trip and whether it was a critical error.
--
-- score_drop = max(0, score(r-1) - score(r)) with score(0) = 1.0 (the seed). Critical: a fall of
-- at least 10 points; compared with a 1e-9 tolerance so that 0.90 -> 0.80, which is
-- 0.0999999... in binary floating point, counts as the 10 points it is.
CREATE OR REPLACE VIEW d52_round_trip_drops AS
WITH ordered AS (
    SELECT
        run_id, model, mode, distractors, domain, round_trip, k, score,
        lag(score, 1, 1.0) OVER (PARTITION BY run_id ORDER BY round_trip) AS previous
    FROM d52_scores
)
SELECT
    run_id, model, mode, distractors, domain, round_trip, k, score, previous,
    greatest(previous - score, 0) AS score_drop,
    previous - score >= 0.10 - 1e-9 AS critical
FROM ordered;
