"""The append-only store and the DuckDB connection that exposes every view."""
