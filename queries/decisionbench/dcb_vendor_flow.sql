-- DecisionBench vendor x vendor delegation flow: share (%) of each orchestrator vendor's delegations that went to each peer vendor.
CREATE OR REPLACE VIEW dcb_vendor_flow AS
WITH flows AS (
    SELECT o.vendor AS orchestrator_vendor, d.peer_vendor, count(*) AS n
    FROM dcb_delegations AS d
    JOIN (SELECT DISTINCT model, vendor FROM dcb_pool) AS o ON o.model = d.model
    WHERE d.peer_vendor IS NOT NULL
    GROUP BY o.vendor, d.peer_vendor
)
SELECT
    orchestrator_vendor, peer_vendor, n,
    100.0 * n / sum(n) OVER (PARTITION BY orchestrator_vendor) AS share_pct
FROM flows;
