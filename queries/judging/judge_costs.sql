-- Per rubric and LLM judge, what judging took: answers, invalid ones, tokens and dollars.
--
-- Every answer counts, replaced and invalid ones included (each was a paid call).
-- `cost_usd` is NULL when any answer's cost is unknown (a model missing from the price
-- list), never a partial sum; `unpriced` counts those answers. `cost_per_1000` is the
-- cost of 1,000 answers at this judge's average.
CREATE OR REPLACE VIEW judge_costs AS
SELECT
    rubric, rater AS judge,
    count(*) AS calls,
    count(*) FILTER (WHERE NOT valid) AS invalid,
    sum(coalesce(prompt_tokens, 0) + coalesce(completion_tokens, 0)) AS tokens,
    count(*) FILTER (WHERE cost_usd IS NULL) AS unpriced,
    CASE WHEN count(*) FILTER (WHERE cost_usd IS NULL) = 0 THEN sum(cost_usd) END AS cost_usd,
    CASE WHEN count(*) FILTER (WHERE cost_usd IS NULL) = 0 THEN 1000 * sum(cost_usd) / count(*) END AS cost_per_1000
FROM judgments
WHERE rubric IS NOT NULL AND rater_kind = 'llm'
GROUP BY ALL;
