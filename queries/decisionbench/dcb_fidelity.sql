-- DecisionBench delegation fidelity@1 and @3 per condition (%), pooled over models and suites.
-- tracewh: materialize (a headline view: computed once per store version, in the catalog)
CREATE OR REPLACE VIEW dcb_fidelity AS
SELECT
    condition,
    count(*) AS n,
    100.0 * count(*) FILTER (WHERE peer_rank <= 1) / count(*) AS fid1_pct,
    100.0 * count(*) FILTER (WHERE peer_rank <= 3) / count(*) AS fid3_pct
FROM dcb_delegations
WHERE dominant_skill IS NOT NULL
GROUP BY condition;
