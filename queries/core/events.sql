-- Every stored event, one row each, with corrections applied (an event named by a later event's `supersedes` is hidden).
--
-- `events_raw` is the store's committed Parquet files; tracewh defines it on every
-- connection. Outside tracewh, define it yourself, e.g. in DuckDB:
--   CREATE VIEW events_raw AS SELECT * FROM delta_scan('<warehouse>/events');
-- (a plain read_parquet('<warehouse>/events/**/*.parquet', hive_partitioning = true)
-- also works once `tracewh doctor` has removed files of interrupted writes).
CREATE OR REPLACE VIEW events AS
SELECT *
FROM events_raw
WHERE event_id NOT IN (
    SELECT supersedes FROM events_raw WHERE supersedes IS NOT NULL
);
