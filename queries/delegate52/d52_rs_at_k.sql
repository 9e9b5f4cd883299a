-- DELEGATE-52 Table 1: mean reconstruction score RS@k (points) per model, mode and distractor setting, k = 2, 4, ...
--
-- Mean over the relays that reached round trip k/2 (incomplete relays count up to where
-- they stopped); a relay is weighted once, whatever its domain.
-- tracewh: materialize (a headline view: computed once per store version, in the catalog)
CREATE OR REPLACE VIEW d52_rs_at_k AS
SELECT
    model,
    mode,
    distractors,
    k,
    100 * avg(score) AS rs,
    count(DISTINCT run_id) AS n_relays
FROM d52_scores
GROUP BY model, mode, distractors, k;
