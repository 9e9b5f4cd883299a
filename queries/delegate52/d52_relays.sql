-- DELEGATE-52: one row per relay (one model on one environment): round trips reached, completeness, final score.
--
-- round_trips: the last round trip with a score. complete: a score exists at the planned
-- number of round trips N, from the run attribute num_round_trips (`ingest --attr
-- num_round_trips=N`; attributes merge as in `run_attributes`, a later one wins), default
-- 10 as in the paper. rs_end: points (0-100) at the last
-- round trip reached. Relays with interactions but no score yet have round_trips 0.
CREATE OR REPLACE VIEW d52_relays AS
WITH relays AS (
    SELECT
        run_id,
        any_value(model) AS model,
        any_value(mode) AS mode,
        any_value(distractors) AS distractors,
        any_value(domain) AS domain,
        any_value(env_id) AS env_id
    FROM d52_interactions
    GROUP BY run_id
),
reached AS (
    SELECT run_id, max(round_trip) AS round_trips, arg_max(score, round_trip) AS last_score
    FROM d52_scores
    GROUP BY run_id
),
planned AS (
    SELECT run_id, TRY_CAST(attrs ->> '$.num_round_trips' AS INTEGER) AS n
    FROM run_attributes
)
SELECT
    r.run_id,
    r.model,
    r.mode,
    r.distractors,
    r.domain,
    r.env_id,
    coalesce(s.round_trips, 0) AS round_trips,
    coalesce(s.round_trips, 0) >= coalesce(p.n, 10) AS complete,
    100 * s.last_score AS rs_end
FROM relays AS r
LEFT JOIN reached AS s USING (run_id)
LEFT JOIN planned AS p USING (run_id);
