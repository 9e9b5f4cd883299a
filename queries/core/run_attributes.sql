-- One row per run that has attributes: the merged payloads of its run_attrs events (later ones win on a key).
--
-- Attributes a source declares come first (no time); `ingest --attr` ones carry the time
-- they were attached, so a later --attr overrides both.
-- tracewh: materialize by run_id (read by every benchmark's run views)
CREATE OR REPLACE VIEW run_attributes AS
SELECT
    run_id,
    list_reduce(
        list(payload::JSON ORDER BY ts NULLS FIRST, seq, event_id),
        lambda a, b: json_merge_patch(a, b)
    ) AS attrs
FROM events
WHERE kind = 'run_attrs'
GROUP BY run_id;
