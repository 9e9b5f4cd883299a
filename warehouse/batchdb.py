"""DuckDB connections for work over one batch (checks, dedup, quarantine): bounded memory.

DuckDB's default memory limit is 80% of RAM, which it fills before spilling; with a limit
it spills to the batch's staging folder instead. Set TRACEWH_BATCH_MEMORY (e.g. "2GB") to
trade memory for speed (docs/performance.md).
"""

from __future__ import annotations

import os
from pathlib import Path

import duckdb

# What DuckDB may hold for a batch's checks, dedup and writes; what does not fit spills. It fills
# this only on batches of millions of events (the gate's window at 15M events), where 640 MB
# against 1 GB cost the gate 1 s in 13 and kept the ingest's peak RSS at 1.2 GB, not 1.7.
MEMORY_LIMIT = os.environ.get("TRACEWH_BATCH_MEMORY", "640MB")


def batch_connection(spill_dir: Path) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect(config={"memory_limit": MEMORY_LIMIT, "temp_directory": str(spill_dir / "spill"),
                                 "preserve_insertion_order": False})
    con.execute("set enable_progress_bar = false")  # a long query would draw DuckDB's bar over the ingest's
    return con
