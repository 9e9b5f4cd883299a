"""DuckDB connections for work over one batch (checks, dedup, quarantine): bounded memory.

DuckDB's default memory limit is 80% of RAM, which it fills before spilling; with a limit
it spills to the batch's staging folder instead. Set TRACEWH_BATCH_MEMORY (e.g. "2GB") to
trade memory for speed (docs/performance.md).
"""

from __future__ import annotations

import os
from pathlib import Path

import duckdb

# Enough for DuckDB to sort and hash ids in memory; what does not fit spills.
MEMORY_LIMIT = os.environ.get("TRACEWH_BATCH_MEMORY", "1GB")


def batch_connection(spill_dir: Path) -> duckdb.DuckDBPyConnection:
    return duckdb.connect(config={"memory_limit": MEMORY_LIMIT, "temp_directory": str(spill_dir / "spill"),
                                  "preserve_insertion_order": False})
