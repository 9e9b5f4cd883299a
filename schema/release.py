"""The release format `tracewh-release/1`, written by `tracewh release` (analytics/release/) and
read back by `tracewh ingest` (ingest/adapters/release/): the names both sides agree on.

A release folder holds `croissant.json` (Croissant metadata whose `events` record set has the
event schema's columns), `events/*.parquet` (the events, one column per schema column, each
file's footer naming FORMAT under FOOTER_KEY), and optionally `README.md` and `views/`. docs/release.md.
"""

FORMAT = "tracewh-release/1"
FOOTER_KEY = b"tracewh"  # Parquet key-value metadata: {"format": FORMAT, "tracewh_version": ..., ...}
METADATA = "croissant.json"
EVENTS = "events"  # the folder of event shards; also the Croissant record set's @id
CARD = "README.md"
VIEWS = "views"
CROISSANT_1_0 = "http://mlcommons.org/croissant/1.0"
