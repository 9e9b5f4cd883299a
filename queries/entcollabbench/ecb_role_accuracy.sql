-- EntCollabBench: per-role accuracy (the paper's Tables 4 and 5): (agent, subtask) pairs of the role passed / pairs, in points.
-- tracewh: materialize (a headline view: computed once per store version, in the catalog)
CREATE OR REPLACE VIEW ecb_role_accuracy AS
SELECT
    model,
    multi,
    agent,
    count(*) AS n,
    count(*) FILTER (WHERE passed) AS passed,
    100.0 * count(*) FILTER (WHERE passed) / count(*) AS acc
FROM ecb_agent_pairs
GROUP BY model, multi, agent;
