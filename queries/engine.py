"""The query engine: a DuckDB connection over one version of the store, with every view, and
the one place where limits apply.

`QueryEngine.execute` is what every door runs a query through (the CLI, the Python API's
`query()`, the HTTP service): the time limit covers everything from view creation to the
last row fetched; the row cap and the byte cap apply while fetching (the query text is never
wrapped); every engine error becomes a QueryError (with a "did you mean" for unknown names).
`relation()` is the raw path for Python users (`Warehouse.sql()`): no limits.

The views come from the compiled catalog of the store's version (queries/catalog.py),
attached read-only, or, without one, are created on the connection as queries need them.
Connections never install or load extensions, and their configuration is locked once set up.

Spill: what does not fit in the memory limit DuckDB writes to a temporary folder (`Spill`). By
default a folder of this process under the system's temporary directory (`$TMPDIR`), never the
working directory (DuckDB's own default, `./.tmp`), made when a query first spills and removed
when the engine closes; the service gives each engine a capped folder of its own.

Isolation: an engine opened with `isolation` (the service's QueryWorkers, queries/isolation.py)
runs `execute` in a worker process that opens the same engine, so that a query's memory and
time are bounded by killing the process when DuckDB's own limits do not hold.
"""

from __future__ import annotations

import itertools
import os
import re
import tempfile
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import duckdb

from ..errors import CatalogGone, QueryError, QueryTimeout, StoreError
from ..schema import COLUMN_NAMES
from ..warehouse.sqltext import literal, literal_list
from .parse import did_you_mean, first_line, parse
from .registry import load_views, view_names, views_needed

if TYPE_CHECKING:
    import pyarrow as pa

FETCH_ROWS = 8192
CAPPED_FETCH_ROWS = 256  # under a byte cap, few rows per fetch: a row may hold megabytes


class QueryResult:
    """A query's rows, capped and timed (`Warehouse.query()`, `view()`, `runs()`), read the way a
    DuckDB relation (`Warehouse.sql()`) is read:

        result.arrow()       a pyarrow Table          result.fetchall()   a list of tuples
        result.pl()          a Polars DataFrame       result.df()         a pandas DataFrame
        result.columns       column names             result.types        DuckDB type names
        result.truncated     whether the row or byte cap cut the rows     len(result)  the row count

    The rows arrive in one form (Arrow; Python tuples with `query(arrow=False)`, what a terminal
    needs) and are converted to another once, when first asked for. `.table` and `.tuples()`
    are the older names of `.arrow()` and `.fetchall()`, kept for existing callers."""

    def __init__(self, columns: list[str], types: list[str], arrow: pa.Table | None = None,
                 rows: list[tuple] | None = None, truncated: bool = False):
        self.columns = columns
        self.types = types
        self.truncated = truncated
        self._arrow, self._rows = arrow, rows

    def __repr__(self) -> str:
        return f"QueryResult({len(self)} rows, columns={self.columns}, truncated={self.truncated})"

    def __len__(self) -> int:
        return self._arrow.num_rows if self._arrow is not None else len(self._rows or [])

    def arrow(self) -> pa.Table:
        if self._arrow is None:
            import pyarrow as pa

            rows = self._rows or []
            # column by column: a list of dicts would merge repeated names and lose every column of no rows
            values = list(zip(*rows)) if rows else [() for _ in self.columns]
            self._arrow = pa.Table.from_arrays([pa.array(list(v)) if rows else pa.array([], pa.null()) for v in values],
                                               names=self.columns)
        return self._arrow

    def fetchall(self) -> list[tuple]:
        if self._rows is None:
            with python_values():
                table = self.arrow()
                self._rows = list(zip(*(c.to_pylist() for c in table.columns))) if table.num_columns else []
        return self._rows

    def pl(self) -> Any:  # polars.DataFrame (imported on use)
        import polars as pl

        return pl.from_arrow(self.arrow())

    def df(self) -> Any:  # pandas.DataFrame (imported on use)
        return self.arrow().to_pandas()

    @property
    def table(self) -> pa.Table:
        """The rows as a pyarrow Table: `arrow()`."""
        return self.arrow()

    def tuples(self) -> list[tuple]:
        """The rows as Python tuples: `fetchall()`."""
        return self.fetchall()


@contextmanager
def python_values() -> Iterator[None]:
    """Converting DuckDB or Arrow values to Python ones: a value Python has no equivalent for (a date
    past year 9999, 'infinity'::date) raised OverflowError, a traceback from the CLI and a 500 from
    the service; it is the query's to fix."""
    try:
        yield
    except (OverflowError, ValueError) as error:
        raise QueryError(f"a value in the result has no Python equivalent ({error}); cast that column to VARCHAR, "
                         "e.g. CAST(ts AS VARCHAR)") from None


@dataclass
class Limits:
    """What one query may take; None = no limit."""

    rows: int | None = None
    seconds: float | None = None
    bytes: int | None = None
    arrow: bool = True  # fetch as Arrow (False: Python tuples)
    tables: Iterable[str] | None = field(default=None)  # what the query reads, when the guard knows


@dataclass(frozen=True)
class Spill:
    """Where an engine's DuckDB writes what does not fit in its memory limit: a folder of its own
    (DuckDB makes it on the first spill and removes it on close; `parent` must exist) and the
    most it may hold there (None: DuckDB's default, 90% of the free disk)."""

    parent: Path
    max_bytes: int | None = None

    def folder(self) -> Path:
        return self.parent / f"tracewh-spill-{os.getpid()}-{next(_ENGINE_NUMBERS)}"


_ENGINE_NUMBERS = itertools.count()  # two engines of one process never share a spill folder


@dataclass(frozen=True)
class EngineSpec:
    """How an engine was opened: what a worker process needs to open the same one."""

    files: tuple[str, ...] | None
    catalog: Path | None
    sandbox: Path | None
    memory_limit: str | None


class Isolation(Protocol):
    """Where an engine runs its queries instead of in this process: the service's worker
    processes (queries/isolation.py `QueryWorkers`)."""

    def execute(self, spec: EngineSpec, query: str, params: list | None, limits: Limits) -> QueryResult: ...

    def server_spill(self) -> Spill: ...


class QueryEngine:
    """One DuckDB connection where `events_raw` is a version's committed files and every view is
    at hand. `catalog`: that version's compiled catalog; else `files`, views made as needed.
    `sandbox`: the engine may read the store's folder only (the service). `spill`: where it
    spills (default: the system's temporary directory, uncapped). `isolation`: `execute` runs
    in one of these worker processes instead of here."""

    def __init__(self, files: list[str] | None = None, *, catalog: Path | None = None, sandbox: Path | None = None,
                 memory_limit: str | None = None, spill: Spill | None = None, isolation: Isolation | None = None):
        self.spec = EngineSpec(None if catalog is not None else tuple(files or []), catalog, sandbox, memory_limit)
        self.isolation = isolation
        self._spill = spill or (isolation.server_spill() if isolation is not None else Spill(Path(tempfile.gettempdir())))
        # Where the store's own files are: an error reading a file there means the store is damaged.
        self.store_files = str(catalog.parent.parent / "events") if catalog is not None else \
            os.path.commonpath(files) if files else None
        self._con: duckdb.DuckDBPyConnection | None = None
        self._views: ViewCreator | None = None

    @property
    def con(self) -> duckdb.DuckDBPyConnection:
        """This process's connection to the version, opened on first use: an engine whose queries
        run in worker processes needs none to answer POST /sql, and opening one (the catalog
        attached: 19-32 ms) for each read of each new version cost the server that much again
        while live ingest makes a version a second."""
        if self._con is None:
            con = duckdb.connect(":memory:")
            # Committed files never change, so their footers can be cached between queries.
            con.execute("SET parquet_metadata_cache = true")
            if self.spec.catalog is not None:
                _attach_catalog(con, self.spec.catalog)
            else:
                define_events_raw(con, list(self.spec.files or []))
            _lock_down(con, self.spec.sandbox, self.spec.memory_limit, self._spill)
            self._con, self._views = con, ViewCreator(con, precompiled=self.spec.catalog is not None)
        return self._con

    @property
    def views(self) -> ViewCreator:
        self.con  # noqa: B018 - opens the connection the views are created on
        assert self._views is not None
        return self._views

    def relation(self, query: str, params: list | dict | None = None) -> duckdb.DuckDBPyRelation:
        """A DuckDB relation for `query` (views created first); no limits."""
        with engine_errors(store_files=self.store_files):
            self.views.for_query(query)
            return self.con.sql(query, params=params)

    @contextmanager
    def time_limit(self, seconds: float | None) -> Iterator[None]:
        """The raw relations run within the block stopped after `seconds` (in this process), and
        their errors as tracewh's: for analytics that run several queries and compute between
        them (Warehouse.compare), where `execute` and its worker processes do not fit."""
        timer = threading.Timer(seconds, self.con.interrupt) if seconds else None
        if timer:
            timer.start()
        try:
            with engine_errors(seconds, self.store_files):
                yield
        finally:
            if timer:
                timer.cancel()

    def reader(self, query: str, params: list | None = None, rows: int = FETCH_ROWS,
               tables: Iterable[str] | None = None) -> pa.RecordBatchReader:
        """The query's rows as a stream of Arrow batches; no limits."""
        return self._relation(query, params, tables).to_arrow_reader(rows)

    def execute(self, query: str, params: list | None = None, limits: Limits | None = None) -> QueryResult:
        """Run `query` within the limits (in a worker process, with `isolation`)."""
        limits = limits or Limits()
        if self.isolation is not None:
            return self.isolation.execute(self.spec, query, params, limits)
        timer = threading.Timer(limits.seconds, self.con.interrupt) if limits.seconds else None
        if timer:
            timer.start()
        try:
            with engine_errors(limits.seconds, self.store_files):
                if limits.arrow:
                    return _fetch_arrow(self._relation(query, params, limits.tables), limits)
                self.views.for_tables(limits.tables) if limits.tables is not None else self.views.for_query(query)
                with python_values():
                    return _fetch_rows(self.con.execute(query, params or None), limits)
        finally:
            if timer:
                timer.cancel()

    def _relation(self, query: str, params: list | None, tables: Iterable[str] | None) -> duckdb.DuckDBPyRelation:
        with engine_errors(store_files=self.store_files):
            self.views.for_tables(tables) if tables is not None else self.views.for_query(query)
            return self.con.sql(query, params=params or None)

    def view_columns(self) -> dict[str, list[tuple[str, str]]]:
        """Every view's (column, DuckDB type), bound but never run."""
        if not self.views.precompiled:
            self.views.for_tables(view_names())
        rows = self.con.execute("select table_name, column_name, data_type from duckdb_columns() "
                                "where database_name = current_database() order by table_name, column_index").fetchall()
        columns: dict[str, list[tuple[str, str]]] = {}
        for table, column, kind in rows:
            columns.setdefault(table, []).append((column, kind))
        return columns

    def close(self) -> None:
        if self._con is not None:
            self._con.close()


def _lock_down(con: duckdb.DuckDBPyConnection, sandbox: Path | None, memory_limit: str | None, spill: Spill) -> None:
    # Queries never reach the network: no extension is installed or loaded behind the user's back.
    con.execute("SET autoinstall_known_extensions = false")
    con.execute("SET autoload_known_extensions = false")
    if memory_limit:
        con.execute(f"SET memory_limit = {literal(memory_limit)}")
    con.execute(f"SET temp_directory = {literal(spill.folder())}")
    if spill.max_bytes is not None:
        con.execute(f"SET max_temp_directory_size = '{spill.max_bytes}B'")
    if sandbox is not None:
        con.execute(f"SET allowed_directories = {literal_list([f'{sandbox}/'])}")
        con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")  # no query can change any of the above


def _fetch_rows(cursor: duckdb.DuckDBPyConnection, limits: Limits) -> QueryResult:
    """Python tuples straight from DuckDB (no Arrow), at most the row cap."""
    rows: list[tuple] = []
    want = None if limits.rows is None else limits.rows + 1
    while want is None or len(rows) < want:
        batch = cursor.fetchmany(FETCH_ROWS if want is None else min(FETCH_ROWS, want - len(rows)))
        if not batch:
            break
        rows += batch
    truncated = limits.rows is not None and len(rows) > limits.rows
    columns = [d[0] for d in cursor.description or []]
    return QueryResult(columns, [str(d[1]) for d in cursor.description or []],
                       rows=rows[: limits.rows] if truncated else rows, truncated=truncated)


def _fetch_arrow(relation: duckdb.DuckDBPyRelation, limits: Limits) -> QueryResult:
    import pyarrow as pa

    reader = relation.to_arrow_reader(CAPPED_FETCH_ROWS if limits.bytes else FETCH_ROWS)
    batches, rows, size, truncated = [], 0, 0, False
    for batch in reader:
        if limits.rows is not None and rows + batch.num_rows > limits.rows:
            batch, truncated = batch.slice(0, limits.rows - rows), True
        if limits.bytes is not None and size + batch.nbytes > limits.bytes:
            batch, truncated = _within(batch, limits.bytes - size), True
        batches.append(batch)
        rows, size = rows + batch.num_rows, size + batch.nbytes
        if truncated:
            break
    table = pa.Table.from_batches(batches, reader.schema)
    return QueryResult(table.column_names, [str(t) for t in relation.types], arrow=table, truncated=truncated)


def _within(batch: Any, budget: int) -> Any:
    """The longest head of the batch whose Arrow size stays within `budget` bytes."""
    keep = 0
    while keep < batch.num_rows and batch.slice(0, keep + 1).nbytes <= budget:
        keep += 1
    return batch.slice(0, keep)


@contextmanager
def engine_errors(timeout_s: float | None = None, store_files: str | None = None) -> Iterator[None]:
    """DuckDB's errors as tracewh's: what a user typed wrong is a QueryError (with a did-you-mean
    for unknown names), an unreadable store file a StoreError."""
    try:
        yield
    except duckdb.InterruptException:
        raise QueryTimeout(f"query stopped after {timeout_s:g} s (its time limit)") from None
    except (duckdb.CatalogException, duckdb.BinderException) as error:
        raise QueryError(f"{first_line(error, location=False)}{did_you_mean(str(error), view_names() + list(COLUMN_NAMES))}") from None
    except duckdb.PermissionException as error:
        raise QueryError(f"refused by the engine: {first_line(error, location=False)}") from None
    except duckdb.OutOfMemoryException as error:
        if "max_temp_directory_size" in str(error):  # the spill folder's cap, not memory
            raise QueryError("the query needs more temporary disk space than it may use "
                             f"({first_line(error, location=False)})") from None
        raise QueryError(f"the query needs more memory than it may use ({first_line(error, location=False)})") from None
    except duckdb.IOException as error:
        if _names_store_file(str(error), store_files):
            raise StoreError(f"a store file cannot be read ({first_line(error, location=False)}); "
                             "`tracewh check` names every damaged file") from None
        raise QueryError(first_line(error, location=False)) from None
    except duckdb.Error as error:
        raise QueryError(first_line(error, location=False)) from None


def _names_store_file(message: str, store_files: str | None) -> bool:
    """Whether an IO error is about one of the store's own Parquet files (`store_files`: their
    folder, when known). A user's own path or pattern that matches nothing ("No files found that
    match the pattern '/x/*.parquet'") said the store was damaged, with exit code 1."""
    if "parquet" not in message.lower():
        return False
    if store_files is None:
        return True
    named = [a or b for a, b in re.findall(r'"([^"]+)"|\'([^\']+)\'', message)]
    return any(p.startswith(store_files + os.sep) and not any(c in p for c in "*?[{") for p in named)


class ViewCreator:
    """Creates views on a connection as queries first need them (binding all of them took ~1.8 s on
    the demo store); nothing to do when the views come precompiled in a catalog.

    A view marked for materialization is computed once into a temporary table the view
    then reads: a connection sees one store version, so the rows cannot go stale."""

    def __init__(self, con: duckdb.DuckDBPyConnection, materialize: bool = True, precompiled: bool = False):
        self.con, self.created, self.materialize, self.precompiled = con, set(), materialize, precompiled

    def for_query(self, query: str) -> None:
        """The views `query` reads (all of them when DuckDB cannot say: always correct, only slower)."""
        if self.precompiled:
            return
        try:
            tables: Iterable[str] = parse(query).tables()
        except QueryError:
            tables = [v.name for v in load_views()]
        self.for_tables(tables)

    def for_tables(self, tables: Iterable[str]) -> None:
        if self.precompiled:
            return
        for view in views_needed(tables):
            if view.name not in self.created:
                self.con.execute(view.sql)
                if view.materialize and self.materialize:
                    table = f"tracewh_cache_{view.name}"
                    self.con.execute(f"CREATE TEMP TABLE {table} AS SELECT * FROM {view.name}")
                    self.con.execute(f"CREATE OR REPLACE VIEW {view.name} AS SELECT * FROM {table}")
                self.created.add(view.name)


def define_events_raw(con: duckdb.DuckDBPyConnection, files: list[str]) -> None:
    con.execute(f"CREATE OR REPLACE VIEW events_raw AS {events_raw_query(files)}")


def events_raw_query(files: list[str]) -> str:
    """The stored events of `files`, with every column of the event schema."""
    # Only files the Delta log lists are read, so a batch being written (or left by a
    # crashed writer) is invisible. Partition values come back as text, never guessed.
    if files:
        return (f"SELECT {', '.join(COLUMN_NAMES)} FROM read_parquet({literal_list(files)}, "
                "hive_partitioning = true, hive_types_autocast = false, union_by_name = true)")
    from ..schema.events import COLUMNS, duckdb_type  # no data yet: the same columns, no rows

    return "SELECT " + ", ".join(f"NULL::{duckdb_type(c)} AS {c.name}" for c in COLUMNS) + " WHERE false"


def _attach_catalog(con: duckdb.DuckDBPyConnection, catalog: Path) -> None:
    """The catalog attached as the connection's database; CatalogGone when it was removed since
    the version was chosen (a read that waited while newer versions' catalogs replaced it)."""
    try:
        con.execute(f"ATTACH {literal(catalog)} AS catalog (READ_ONLY)")
    except duckdb.IOException:
        if catalog.exists():
            raise
        raise CatalogGone(f"the catalog {catalog.name} was removed before it could be read; read a newer "
                          "version") from None
    con.execute("USE catalog")
