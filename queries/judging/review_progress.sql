-- Progress of each review queue, per annotator: one row per queue (rubric) and annotator who
-- has a current label on at least one of its items.
--
-- `labelled` counts the queue's items the annotator has a current label on (a correction
-- counts once); `items` and `done` are the whole queue's (review_queue); `left` is what the
-- `remaining` is what the annotator could still label: items neither done nor labelled by them.
CREATE OR REPLACE VIEW review_progress AS
WITH queues AS (
    SELECT rubric, count(*) AS items, count(*) FILTER (WHERE done) AS done
    FROM review_queue
    GROUP BY rubric
),
by_annotator AS (
    SELECT q.rubric, a.annotator, count(*) AS labelled, count(*) FILTER (WHERE NOT q.done) AS labelled_open
    FROM review_queue q, unnest(q.annotators) AS a(annotator)
    GROUP BY q.rubric, a.annotator
)
SELECT
    b.rubric, b.annotator, b.labelled, q.items, q.done,
    q.items - q.done - b.labelled_open AS remaining
FROM by_annotator b
JOIN queues q USING (rubric);
