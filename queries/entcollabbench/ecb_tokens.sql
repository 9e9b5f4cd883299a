-- EntCollabBench: mean tokens per task, and per successful task (the paper's Tables 6–7 read successful tasks).
CREATE OR REPLACE VIEW ecb_tokens AS
SELECT
    model,
    subset,
    multi,
    avg(tokens) AS tokens_per_task,
    avg(tokens) FILTER (WHERE passed) AS tokens_per_success
FROM ecb_tasks
GROUP BY model, subset, multi;
