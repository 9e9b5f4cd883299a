"""Archive reading, format detection, one adapter per source format, and the ingest pipeline."""
