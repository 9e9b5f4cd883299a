"""A DuckDB connection over the store's committed files, with every view registered."""

from __future__ import annotations

import duckdb
import pyarrow as pa

from ..queries.registry import views_needed
from ..schema import ARROW_SCHEMA, COLUMN_NAMES
from .sqltext import literal_list
from .store import Store


def connect(store: Store, version: int | None = None, database: str = ":memory:") -> duckdb.DuckDBPyConnection:
    """Connection where `events_raw` is the store as of `version` (default: latest); views are
    created as queries need them (ViewCreator)."""
    con = duckdb.connect(database)
    # Committed files never change, so their footers can be cached: every view bound over
    # events_raw would otherwise re-read the footers of every file in the store.
    con.execute("SET parquet_metadata_cache = true")
    define_events_raw(con, store.files(version))
    return con


class ViewCreator:
    """Creates views on a connection as queries first need them (binding all 54 takes ~1.8 s on the demo store).

    A view marked for materialization is computed once into a temporary table the view
    then reads: a connection sees one store version, so the rows cannot go stale."""

    def __init__(self, con: duckdb.DuckDBPyConnection, materialize: bool = True):
        self.con, self.created, self.materialize = con, set(), materialize

    def for_query(self, query: str) -> None:
        for view in views_needed(query):
            if view.name not in self.created:
                self.con.execute(view.sql)
                if view.materialize and self.materialize:
                    table = f"tracewh_cache_{view.name}"
                    self.con.execute(f"CREATE TEMP TABLE {table} AS SELECT * FROM {view.name}")
                    self.con.execute(f"CREATE OR REPLACE VIEW {view.name} AS SELECT * FROM {table}")
                self.created.add(view.name)


def define_events_raw(con: duckdb.DuckDBPyConnection, files: list[str]) -> None:
    # Only files the Delta log lists are read, so a batch being written (or left by a
    # crashed writer) is invisible. Partition values come back as text, never guessed.
    columns = ", ".join(COLUMN_NAMES)
    if files:
        con.execute(
            f"CREATE OR REPLACE VIEW events_raw AS SELECT {columns} FROM read_parquet({literal_list(files)}, "
            "hive_partitioning = true, hive_types_autocast = false, union_by_name = true)"
        )
    else:
        con.register("events_raw_empty", pa.Table.from_batches([], ARROW_SCHEMA))
        con.execute(f"CREATE OR REPLACE VIEW events_raw AS SELECT {columns} FROM events_raw_empty")
