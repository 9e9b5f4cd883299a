-- DELEGATE-52 critical errors: share of all degradation that came from critical rounds, and mean drops per relay (points).
--
-- pct_critical = sum of critical drops / sum of all drops, pooled over the relays of a
-- model (NULL when nothing dropped); avg_drop and avg_crit_drop are per-relay sums, averaged.
-- tracewh: materialize (a headline view: computed once per store version, in the catalog)
CREATE OR REPLACE VIEW d52_critical AS
WITH per_relay AS (
    SELECT
        run_id, model, mode, distractors,
        sum(score_drop) AS total_drop,
        coalesce(sum(score_drop) FILTER (WHERE critical), 0) AS critical_drop
    FROM d52_round_trip_drops
    GROUP BY run_id, model, mode, distractors
)
SELECT
    model, mode, distractors,
    count(*) AS n_relays,
    100 * sum(critical_drop) / nullif(sum(total_drop), 0) AS pct_critical,
    100 * avg(total_drop) AS avg_drop,
    100 * avg(critical_drop) AS avg_crit_drop
FROM per_relay
GROUP BY model, mode, distractors;
