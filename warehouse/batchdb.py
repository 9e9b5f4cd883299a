"""DuckDB connections for work over one batch (checks, dedup, quarantine): bounded memory.

DuckDB's default memory limit is 80% of RAM, which it fills before spilling; with a limit
it spills to the batch's staging folder instead. Set TRACEWH_BATCH_MEMORY (e.g. "2GB") to
trade memory for speed (docs/performance.md).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb

# What DuckDB may hold for a batch's checks, dedup and writes; what does not fit spills. It fills
# this only on batches of millions of events (the gate's window at 15M events), where 640 MB
# against 1 GB cost the gate 1 s in 13 and kept the ingest's peak RSS at 1.2 GB, not 1.7.
MEMORY_LIMIT = os.environ.get("TRACEWH_BATCH_MEMORY", "640MB")


_kept: duckdb.DuckDBPyConnection | None = None  # one_instance's


@contextmanager
def one_instance(spill_dir: Path) -> Iterator[None]:
    """Within the block this process's batches share one DuckDB instance, spilling to `spill_dir`
    (DuckDB cannot move an instance's temporary directory once it has spilled, so one folder for
    the block). A new instance cost 30 ms to start and 10 ms to close, 7-9% of a commit of
    1,536 spans, which the service's commit process makes about once a second."""
    global _kept
    _kept = _instance(spill_dir)
    try:
        yield
    finally:
        _kept.close()
        _kept = None


def batch_connection(spill_dir: Path) -> duckdb.DuckDBPyConnection:
    """A connection for one batch (close it after): its own instance, or one of the kept instance
    (its temp views and registered tables are the connection's own, and go with it)."""
    con = _kept.cursor() if _kept is not None else _instance(spill_dir)
    con.execute("set enable_progress_bar = false")  # a long query would draw DuckDB's bar over the ingest's
    return con


def _instance(spill_dir: Path) -> duckdb.DuckDBPyConnection:
    return duckdb.connect(config={"memory_limit": MEMORY_LIMIT, "temp_directory": str(spill_dir / "spill"),
                                  "preserve_insertion_order": False})
