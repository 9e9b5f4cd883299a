"""The query engine: a DuckDB connection over one version of the store, with every view, and
the one place where limits apply.

`QueryEngine.execute` is what every door runs a query through (the CLI, the Python API's
`query()`, the HTTP service): views are created as the query needs them, the time limit
covers view creation, the query and fetching, the row cap is applied while fetching (the
query text is never wrapped), and every engine error becomes a QueryError with a "did you
mean". `relation()` is the raw path for Python users (`Warehouse.sql()`): no limits.
"""

from __future__ import annotations

import difflib
import re
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pyarrow as pa

from ..errors import QueryError, QueryTimeout, StoreError
from ..schema import ARROW_SCHEMA, COLUMN_NAMES
from ..warehouse.sqltext import literal_list
from .parse import first_line, parse
from .registry import load_views, views_needed

FETCH_ROWS = 8192


@dataclass
class QueryResult:
    """Rows of a query (an Arrow table) and whether the row cap cut them."""

    table: pa.Table
    truncated: bool = False

    @property
    def columns(self) -> list[str]:
        return self.table.column_names


class QueryEngine:
    """One DuckDB connection where `events_raw` is the given committed files and views appear
    as queries need them. `sandbox`: the engine may read the store's folder only (the service)."""

    def __init__(self, files: list[str], sandbox: Path | None = None, database: str = ":memory:"):
        self.con = duckdb.connect(database)
        # Committed files never change, so their footers can be cached: every view bound over
        # events_raw would otherwise re-read the footers of every file in the store.
        self.con.execute("SET parquet_metadata_cache = true")
        define_events_raw(self.con, files)
        # Queries never reach the network: no extension is installed or loaded behind the user's back.
        self.con.execute("SET autoinstall_known_extensions = false")
        self.con.execute("SET autoload_known_extensions = false")
        if sandbox is not None:
            self.con.execute(f"SET allowed_directories = {literal_list([f'{sandbox}/'])}")
            self.con.execute("SET enable_external_access = false")
        self.views = ViewCreator(self.con)

    def relation(self, query: str, params: list | None = None) -> duckdb.DuckDBPyRelation:
        """A DuckDB relation for `query` (views created first); no limits."""
        with engine_errors():
            self.views.for_query(query)
            return self.con.sql(query, params=params)

    def reader(self, query: str, params: list | None = None, rows: int = FETCH_ROWS,
               tables: Iterable[str] | None = None) -> pa.RecordBatchReader:
        """The query's rows as a stream of Arrow batches (views created first: those in `tables`
        when the caller knows them); no limits."""
        with engine_errors():
            self.views.for_tables(tables) if tables is not None else self.views.for_query(query)
            return self.con.sql(query, params=params or None).to_arrow_reader(rows)

    def execute(self, query: str, params: list | None = None, *, limit: int | None = None,
                timeout_s: float | None = None, tables: Iterable[str] | None = None) -> QueryResult:
        """Run `query` within `timeout_s`, keeping at most `limit` rows."""
        timer = threading.Timer(timeout_s, self.con.interrupt) if timeout_s else None
        if timer:
            timer.start()
        try:
            with engine_errors(timeout_s):
                return _fetch(self.reader(query, params, tables=tables), limit)
        finally:
            if timer:
                timer.cancel()

    def close(self) -> None:
        self.con.close()


def _fetch(reader: pa.RecordBatchReader, limit: int | None) -> QueryResult:
    batches, rows = [], 0
    for batch in reader:
        batches.append(batch)
        rows += batch.num_rows
        if limit is not None and rows > limit:
            break
    table = pa.Table.from_batches(batches, reader.schema)
    if limit is not None and table.num_rows > limit:
        return QueryResult(table.slice(0, limit), truncated=True)
    return QueryResult(table)


@contextmanager
def engine_errors(timeout_s: float | None = None) -> Iterator[None]:
    """DuckDB's errors as tracewh's: what a user typed wrong is a QueryError (with a did-you-mean
    for unknown names), an unreadable store file a StoreError."""
    try:
        yield
    except duckdb.InterruptException:
        raise QueryTimeout(f"query stopped after {timeout_s:g} s (its time limit)") from None
    except (duckdb.CatalogException, duckdb.BinderException) as error:
        names = [v.name for v in load_views()] + list(COLUMN_NAMES)
        raise QueryError(f"{first_line(error)}{did_you_mean(str(error), names)}") from None
    except duckdb.PermissionException as error:
        raise QueryError(f"refused by the engine: {first_line(error)}") from None
    except duckdb.IOException as error:
        if "parquet" in str(error).lower():
            raise StoreError(f"a store file cannot be read ({first_line(error)}); "
                             "`tracewh check` names every damaged file") from None
        raise QueryError(first_line(error)) from None
    except duckdb.Error as error:
        raise QueryError(first_line(error)) from None


def did_you_mean(message: str, names: list[str]) -> str:
    """' Did you mean ...?' for the unknown table or column a DuckDB error names, or ''."""
    found = re.search(r'(?:Table with name|Referenced column|column named?) "?([A-Za-z_][\w]*)"?', message)
    if not found:
        return ""
    close = difflib.get_close_matches(found.group(1), names, n=3, cutoff=0.6)
    return f" Did you mean {' or '.join(close)}?" if close else ""


class ViewCreator:
    """Creates views on a connection as queries first need them (binding all 54 takes ~1.8 s on the demo store).

    A view marked for materialization is computed once into a temporary table the view
    then reads: a connection sees one store version, so the rows cannot go stale."""

    def __init__(self, con: duckdb.DuckDBPyConnection, materialize: bool = True):
        self.con, self.created, self.materialize = con, set(), materialize

    def for_query(self, query: str) -> None:
        """The views `query` reads (all of them when DuckDB cannot say: always correct, only slower)."""
        try:
            tables: Iterable[str] = parse(query).tables()
        except QueryError:
            tables = [v.name for v in load_views()]
        self.for_tables(tables)

    def for_tables(self, tables: Iterable[str]) -> None:
        for view in views_needed(tables):
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
