-- Building block of `review_queue`: each queued target's latest registry event, per run.
--
-- `tracewh queue add` writes one `registry` event (payload name review_queue) per queued target,
-- in run `queue:<rubric>`; a target queued again with another number of reviews is a later
-- event, and the latest wins (by time, then sequence). Kept per run so that it is run-local:
-- `review_queue` takes the latest over runs. `target_run_id`, `target_task_id` and
-- `target_model` say what the item is about; `run_id` is the queue's own run.
-- tracewh: materialize by run_id
CREATE OR REPLACE VIEW review_queue_items AS
SELECT
    run_id, event_id, seq,
    payload ->> '$.queue' AS rubric,
    payload ->> '$.target_id' AS target_id,
    payload ->> '$.target_run_id' AS target_run_id,
    payload ->> '$.target_task_id' AS target_task_id,
    payload ->> '$.target_model' AS target_model,
    payload -> '$.reference' AS reference,
    TRY_CAST(payload ->> '$.reviews' AS INTEGER) AS reviews,
    TRY_CAST(payload ->> '$.position' AS BIGINT) AS position,
    payload -> '$.fields' AS fields,
    payload -> '$.label_set' AS label_set,
    payload -> '$.scale' AS scale,
    ts AS queued_ts
FROM events
WHERE benchmark = 'judging' AND kind = 'registry' AND payload ->> '$.name' = 'review_queue'
QUALIFY row_number() OVER (PARTITION BY run_id, rubric, target_id ORDER BY ts DESC NULLS LAST, seq DESC, event_id DESC) = 1;
