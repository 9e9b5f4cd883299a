-- One row per review-queue item: a rubric's target that people are asked to label, with how
-- many reviews it wants, how many it has and who gave them.
--
-- Items are `registry` events (payload name review_queue) written by `tracewh queue add`, read
-- through `review_queue_items`; a target queued again with another number of reviews is a
-- later event, and the latest wins (by time, then sequence). `labels` counts the distinct
-- annotators (rater_kind human) with a current label of the target under the rubric: an
-- annotator who corrects a label still counts once, LLM judges never. `done` once that count reaches `reviews`. `position` is the
-- target's place in the rubric's target query when it was queued (the queue's order).
-- `reference` (JSON) is the target query's reference column; `fields` holds its other
-- columns (JSON) to show reviewers; `label_set` or `scale` is the rubric's answer space.
CREATE OR REPLACE VIEW review_queue AS
WITH items AS (
    SELECT
        rubric, target_id, target_run_id AS run_id, target_task_id AS task_id, target_model AS model,
        reference, reviews, position, fields, label_set, scale, queued_ts
    FROM review_queue_items
    QUALIFY row_number() OVER (PARTITION BY rubric, target_id ORDER BY queued_ts DESC NULLS LAST, seq DESC, event_id DESC) = 1
),
reviewed AS (
    SELECT rubric, target_id, count(DISTINCT rater) AS labels, list(DISTINCT rater ORDER BY rater) AS annotators
    FROM labels
    WHERE rater_kind = 'human'
    GROUP BY rubric, target_id
)
SELECT
    i.rubric, i.target_id, i.run_id, i.task_id, i.model, i.reference, i.reviews,
    coalesce(r.labels, 0) AS labels,
    coalesce(r.labels, 0) >= i.reviews AS done,
    coalesce(r.annotators, []::VARCHAR[]) AS annotators,
    i.position, i.fields, i.label_set, i.scale, i.queued_ts
FROM items i
LEFT JOIN reviewed r ON r.rubric = i.rubric AND r.target_id = i.target_id;
