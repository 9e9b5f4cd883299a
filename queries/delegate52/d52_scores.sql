-- DELEGATE-52: one row per reconstruction score (after each backward edit), with its relay's attributes and element counts.
--
-- score in [0, 1] vs the seed document after round trip `round_trip` (interaction k = 2 * round_trip).
-- A backward evaluation without a score (context_mismatch, wildcard_mismatch) was stored as
-- 0.0 with its error kept in `error`. n_ref / n_gen: the domain's primary element counts
-- (NULL for domains that log none).
-- tracewh: materialize by run_id
CREATE OR REPLACE VIEW d52_scores AS
SELECT
    run_id,
    model,
    payload ->> '$.mode' AS mode,
    CAST(payload ->> '$.distractors' AS BOOLEAN) AS distractors,
    payload ->> '$.domain' AS domain,
    payload ->> '$.category' AS category,
    task_id AS env_id,
    subtask AS edit_id,
    CAST(payload ->> '$.round_trip' AS INTEGER) AS round_trip,
    CAST(payload ->> '$.k' AS INTEGER) AS k,
    score,
    TRY_CAST(payload ->> '$.n_ref' AS DOUBLE) AS n_ref,
    TRY_CAST(payload ->> '$.n_gen' AS DOUBLE) AS n_gen,
    error,
    event_id,
    ts
FROM scores
WHERE benchmark = 'delegate52' AND metric = 'reconstruction';
