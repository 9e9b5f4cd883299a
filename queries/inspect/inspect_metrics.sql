-- Inspect AI: one row per metric an eval log reports (its `results`): scorer, metric and value as the log has them.
--
-- Inspect computes metrics after reducing each sample's epochs (default: mean) and leaves
-- NaN scores out, so they are not always the mean of inspect_scores. scorer: as in
-- inspect_scores (`scorer/key` for a key of a dict-valued score); metric: the key Inspect
-- gives the metric (`accuracy`, `stderr`, `mean`, ...). reducer: the epoch reducer the
-- metric was computed after, when the log names one (a scorer with several reducers has
-- one row per reducer). value: NULL where the log reports NaN. A log that ended in error,
-- or is still running, reports no metrics.
CREATE OR REPLACE VIEW inspect_metrics AS
SELECT
    m.run_id,
    a.attrs ->> '$.task' AS task,
    a.attrs ->> '$.model' AS model,
    m.payload ->> '$.scorer' AS scorer,
    m.payload ->> '$.metric' AS metric,
    m.score AS value,
    m.payload ->> '$.reducer' AS reducer
FROM events AS m
LEFT JOIN run_attributes AS a USING (run_id)
WHERE m.benchmark = 'inspect' AND m.kind = 'score' AND m.payload ->> '$.level' = 'run';
