-- DecisionBench vendor self-preference: each orchestrator's same-vendor share of delegations (%) against chance, and their ratio.
--
-- chance = (k - 1) / (N - 1) for a vendor with k models in an N-model pool; ratio is NULL
-- when chance is 0 (the only model of its vendor). All splits and conditions pooled.
-- tracewh: materialize (a headline view: computed once per store version, in the catalog)
CREATE OR REPLACE VIEW dcb_self_preference AS
WITH pool AS (
    SELECT DISTINCT model, vendor FROM dcb_pool
),
orchestrators AS (
    SELECT
        d.model AS orchestrator,
        o.vendor,
        count(*) AS n,
        100.0 * count(*) FILTER (WHERE d.peer_vendor = o.vendor) / count(*) AS same_vendor_pct
    FROM dcb_delegations AS d
    JOIN pool AS o ON o.model = d.model
    GROUP BY d.model, o.vendor
),
chance AS (
    SELECT
        v.vendor,
        100.0 * (count(*) FILTER (WHERE p.vendor = v.vendor) - 1) / (count(*) - 1) AS chance_pct
    FROM (SELECT DISTINCT vendor FROM pool) AS v
    CROSS JOIN pool AS p
    GROUP BY v.vendor
)
SELECT
    o.orchestrator, o.vendor, o.n, o.same_vendor_pct, c.chance_pct,
    o.same_vendor_pct / nullif(c.chance_pct, 0) AS ratio
FROM orchestrators AS o
JOIN chance AS c USING (vendor);
