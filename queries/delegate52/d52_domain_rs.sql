-- DELEGATE-52 Table 2: end-of-relay score (points) per model and domain, its bucket, and whether the domain is ready (>= 98).
--
-- k_end: the largest k any relay of the (model, mode, distractors, domain) reached (2N for
-- complete relays); rs_end: mean score at k_end over the relays that reached it.
CREATE OR REPLACE VIEW d52_domain_rs AS
WITH ends AS (
    SELECT model, mode, distractors, domain, any_value(category) AS category, max(k) AS k_end
    FROM d52_scores
    GROUP BY model, mode, distractors, domain
),
domain_rs AS (
    SELECT e.model, e.mode, e.distractors, e.domain, e.category, e.k_end, 100 * avg(s.score) AS rs_end
    FROM ends AS e
    JOIN d52_scores AS s
      ON s.model = e.model AND s.mode = e.mode AND s.distractors = e.distractors
     AND s.domain = e.domain AND s.k = e.k_end
    GROUP BY e.model, e.mode, e.distractors, e.domain, e.category, e.k_end
)
SELECT
    model, mode, distractors, domain, category, k_end, rs_end,
    CASE
        WHEN rs_end >= 98 THEN '>=98'
        WHEN rs_end >= 95 THEN '95-98'
        WHEN rs_end >= 90 THEN '90-95'
        WHEN rs_end >= 80 THEN '80-90'
        WHEN rs_end >= 70 THEN '70-80'
        WHEN rs_end >= 55 THEN '55-70'
        ELSE '<55'
    END AS bucket,
    rs_end >= 98 AS ready
FROM domain_rs;
