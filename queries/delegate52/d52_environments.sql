-- DELEGATE-52: one row per work environment of the ingested dataset: domain, category, edits, distractor files.
CREATE OR REPLACE VIEW d52_environments AS
SELECT
    task_id AS env_id,
    payload ->> '$.domain' AS domain,
    payload ->> '$.category' AS category,
    payload ->> '$.sample_name' AS sample_name,
    CAST(payload ->> '$.n_edits' AS INTEGER) AS n_edits,
    payload -> '$.edits' AS edits,
    coalesce(payload ->> '$.distractor_files[*]', []) AS distractor_files,
    TRY_CAST(payload ->> '$.doc_tokens' AS DOUBLE) AS doc_tokens
FROM events
WHERE benchmark = 'delegate52' AND kind = 'registry' AND payload ->> '$.name' = 'd52_environment';
