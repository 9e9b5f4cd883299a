-- DecisionBench delegation fidelity@k per model, suite and condition: share (%) of call_model invocations whose peer was a top-k candidate on the dominant skill.
CREATE OR REPLACE VIEW dcb_fidelity_cells AS
SELECT
    model, suite, condition,
    count(*) AS n,
    100.0 * count(*) FILTER (WHERE peer_rank <= 1) / count(*) AS fid1_pct,
    100.0 * count(*) FILTER (WHERE peer_rank <= 3) / count(*) AS fid3_pct
FROM dcb_delegations
WHERE dominant_skill IS NOT NULL
GROUP BY model, suite, condition;
