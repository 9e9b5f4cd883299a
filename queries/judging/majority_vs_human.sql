-- Per rubric and evaluated model, how often the LLM judges' majority label matches the humans' majority label: agreement and Cohen's kappa.
--
-- Over current labels (`labels`). A target's LLM majority is the label most of its LLM
-- judges gave (rater_kind = 'llm'), its human majority the label most of its annotators
-- gave (rater_kind = 'human'); a target where either side ties, or one side gave no label,
-- is left out (as `majority_vote`, never a coin toss). `model` is the evaluated model: the
-- target's model as the rubric's target query returned it, from any rater's label of the
-- target (NULL when the query returned none). `n` counts the targets compared.
-- cohen_kappa as in `judge_vs_human`: (p_o - p_e) / (1 - p_e), p_e from the two majorities'
-- label shares over those targets (as scikit-learn's cohen_kappa_score); NULL when p_e = 1
-- (both sides gave one label throughout: kappa is undefined).
CREATE OR REPLACE VIEW majority_vs_human AS
WITH votes AS (
    SELECT rubric, target_id, rater_kind, label, count(*) AS votes
    FROM labels
    WHERE label IS NOT NULL AND rater_kind IN ('llm', 'human')
    GROUP BY rubric, target_id, rater_kind, label
),
majorities AS (  -- one row per rubric, target and side with a strict majority
    SELECT rubric, target_id, rater_kind, label
    FROM votes
    QUALIFY votes = max(votes) OVER (PARTITION BY rubric, target_id, rater_kind)
        AND count(*) OVER (PARTITION BY rubric, target_id, rater_kind, votes) = 1
),
models AS (
    SELECT rubric, target_id, max(model) AS model
    FROM labels
    GROUP BY rubric, target_id
),
pairs AS (
    SELECT l.rubric, m.model, l.label AS llm_label, h.label AS human_label
    FROM majorities l
    JOIN majorities h ON h.rubric = l.rubric AND h.target_id = l.target_id AND h.rater_kind = 'human'
    JOIN models m ON m.rubric = l.rubric AND m.target_id = l.target_id
    WHERE l.rater_kind = 'llm'
),
observed AS (
    SELECT rubric, model, count(*) AS n, avg(CASE WHEN llm_label = human_label THEN 1.0 ELSE 0.0 END) AS agreement
    FROM pairs
    GROUP BY rubric, model
),
shares AS (  -- how often each side's majority was each label, over the compared targets
    SELECT rubric, model, label, sum(by_llm) AS n_llm, sum(by_human) AS n_human
    FROM (
        SELECT rubric, model, llm_label AS label, 1 AS by_llm, 0 AS by_human FROM pairs
        UNION ALL
        SELECT rubric, model, human_label AS label, 0 AS by_llm, 1 AS by_human FROM pairs
    )
    GROUP BY rubric, model, label
),
chance AS (
    SELECT rubric, model, sum(n_llm * n_human) / (sum(n_llm) * sum(n_llm)) AS p_e
    FROM shares
    GROUP BY rubric, model
)
SELECT o.rubric, o.model, o.n, o.agreement,
    CASE WHEN c.p_e < 1 THEN (o.agreement - c.p_e) / (1 - c.p_e) END AS cohen_kappa
FROM observed o
JOIN chance c ON c.rubric = o.rubric AND c.model IS NOT DISTINCT FROM o.model;
