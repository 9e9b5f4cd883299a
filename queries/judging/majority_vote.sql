-- Per rubric and target, the label most raters gave (LLM judges and humans alike), or none on a tie.
--
-- Over every rater's current label (`labels`): `raters` is how many gave one, `label` the
-- most frequent, `votes` how many gave it. When two labels share the top count `tie` is
-- true and `label` is NULL (never a coin toss). Scale rubrics (numbers, no labels) have no
-- majority; average their `value` in `labels` instead.
CREATE OR REPLACE VIEW majority_vote AS
WITH counted AS (
    SELECT rubric, target_id, label, count(*) AS votes
    FROM labels
    WHERE label IS NOT NULL
    GROUP BY ALL
),
ranked AS (
    SELECT *,
        sum(votes) OVER (PARTITION BY rubric, target_id) AS raters,
        count(*) OVER (PARTITION BY rubric, target_id, votes) AS sharing,
        max(votes) OVER (PARTITION BY rubric, target_id) AS top
    FROM counted
)
SELECT
    rubric, target_id, raters::BIGINT AS raters,
    CASE WHEN sharing = 1 THEN label END AS label,
    votes,
    sharing > 1 AS tie
FROM ranked
WHERE votes = top
QUALIFY row_number() OVER (PARTITION BY rubric, target_id ORDER BY label) = 1;
