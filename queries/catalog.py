"""The compiled view catalog: one DuckDB database file per (store version, views), holding
`events_raw` over that version's committed files, every view, and the building blocks
marked `-- tracewh: materialize` computed once.

    WAREHOUSE/_catalog/v000012-<views digest>.duckdb

Every query of that version attaches it read-only instead of parsing every view file and
recomputing building blocks in each process. It is never a source of truth: deleting the
folder loses nothing (the next query rebuilds it). It is rebuilt when the store's version
or any view file changes (the digest covers the view files, tracewh's and DuckDB's
versions). Builders take a lock and publish the file by an atomic rename, so concurrent
readers see a whole file or none. A side effect users like: the file opens in any DuckDB
client (duckdb CLI, DBeaver, notebooks) with every view there.

Incremental: the store is append-only, so a new version's catalog starts from the newest
one already built for an older version (same views digest and store path): a copy of that
file, whose `events_raw` gets the new files, whose run-local building blocks (`materialize
by run_id`) are recomputed for the runs the new files touch only, and whose other building
blocks are recomputed from their (refreshed) inputs when those may have changed. Files that
`optimize` wrote from the older version's files keep every computed row (the same events in
other files), with commits after the compaction derived as above; any other version whose files
are not a superset of the older one's is built in full. A small store without an older catalog
starts from its empty catalog (every view, no events), when the service has built it. Why
this gives the rows a full build gives: docs/catalog.md.
"""

from __future__ import annotations

import fcntl
import hashlib
import logging
import os
import shutil
import threading
import time
import uuid
from collections.abc import Callable, Collection, Iterable, Iterator
from contextlib import contextmanager, suppress
from functools import cache, cached_property
from pathlib import Path

import duckdb

from ..version import __version__
from ..warehouse.sqltext import literal, literal_list
from .registry import QUERIES_DIR, ViewDef, kinds_read, load_views, reads_all

log = logging.getLogger("tracewh.catalog")
FOLDER = "_catalog"
# `events` hides events a later one supersedes; in a version where nothing is superseded it is
# events_raw itself, and a count over it then reads only the files' footers.
NOTHING_SUPERSEDED = "CREATE OR REPLACE VIEW events AS SELECT * FROM events_raw"
KEEP_VERSIONS = 3  # the newest catalogs kept; older ones (and any of other view digests) go
# The data files the catalog's events_raw reads, with their correction events: what a newer
# version's build starts from (new files = the difference) and whether `events` must hide any.
FILES = "tracewh_catalog_files"
# The views as the catalog was built from them (in creation order, with what each reads and its
# marker): a newer version's build reads them here instead of parsing every view file again
# (a third of a refresh's time); the views digest in the file name says they are still the files'.
VIEWS = "tracewh_catalog_views"
# Every (run, trace id) pair of events_raw: which runs a store already has, and which runs a trace
# links (a newer version's build finds both here instead of scanning every event).
RUN_TRACES = "tracewh_catalog_run_traces"
# Every (file, run) pair: which files a touched run's events are in (a newer version's build reads
# those files only, not every file of the store).
FILE_RUNS = "tracewh_catalog_file_runs"
# The catalog of no events (ensure_empty_catalog): what a small store's first catalog is derived
# from, when its data files hold at most EMPTY_START_BYTES (a derivation holds the touched runs'
# events in memory as a table, every event here; a full build streams them).
EMPTY = "empty"
EMPTY_START_BYTES = 16 << 20
# Touched runs a derivation's SQL names as constants at most (DuckDB filters a scan with constants;
# more, as a store's first catalog derived from the empty one has, are read from a table).
MANY_RUNS = 1000
# The threads a derivation runs on (None: DuckDB's default, every core). A process that derives
# catalog after catalog while the machine's other work needs the CPU (the service's commit process,
# service/commit_process.py) sets 1: a derivation reads a commit's runs only, and its hundred small
# statements spent 0.86 CPU-s on two threads against 0.54 on one (medians of 12, the other core
# busy). Full builds use every core.
DERIVATION_THREADS: int | None = None


@cache
def views_digest() -> str:
    """What the catalog's views are made of: every view file, tracewh's and DuckDB's versions."""
    h = hashlib.sha256(f"tracewh {__version__} duckdb {duckdb.__version__}\n".encode())
    for path in sorted(QUERIES_DIR.glob("*/*.sql")):
        h.update(path.relative_to(QUERIES_DIR).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def catalog_path(root: Path, version: int) -> Path:
    return root / FOLDER / f"v{version:06d}-{_identity(root)}.duckdb"


def _identity(root: Path) -> str:
    """The views' digest and where the store is: a catalog names its files by absolute path, so a
    store copied or moved elsewhere must not use the catalog it carries along (a copy read the
    original's files; a moved store's queries all failed, and the service refused them)."""
    return f"{views_digest()}-{hashlib.sha256(str(root).encode()).hexdigest()[:8]}"


class CatalogUnavailable(Exception):
    """No catalog can be kept for this store; queries make their views in memory instead."""


def ensure_catalog(root: Path, version: int, files: Callable[[], list[str]]) -> Path:
    """The catalog of `version`, built first if missing (`files` lists that version's data files)."""
    path = catalog_path(root, version)
    if "?" in str(path):  # DuckDB reads "?" in a database path as the start of URI parameters
        raise CatalogUnavailable(f"DuckDB cannot open a database file under {root}")
    if path.exists():
        return path
    with _build_lock(path.parent):
        if not path.exists():
            listed = files()
            older = _older_catalog(path.parent, _identity(root), version) or _empty_catalog(path.parent, listed)
            _build(path, listed, older)
            _remove_stale(path.parent, _identity(root), keep=path)
    return path


@contextmanager
def _build_lock(folder: Path) -> Iterator[None]:
    """The catalog folder's build lock held: one builder at a time, the others find the catalog
    built. Read-only media or a full disk (DuckDB's own writes fail with its IO or fatal error)
    raise CatalogUnavailable: the catalog is a cache, queries go on without it."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with open(folder / ".build.lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            yield
    except (OSError, duckdb.IOException, duckdb.FatalException) as e:
        raise CatalogUnavailable(str(e)) from None


def ensure_empty_catalog(root: Path) -> None:
    """Build the empty catalog of the store at `root` (every view, every building block, no
    events) if missing: a store without data that will soon have some (the service, as it
    starts) derives its first catalogs from it instead of creating every view (0.7 s)."""
    folder = root / FOLDER
    path = _empty_path(folder)
    if path.exists():
        return
    with _build_lock(folder):
        if not path.exists():
            _build(path, [])
        for stale in folder.glob(f"{EMPTY}-*.duckdb"):  # of other views
            if stale != path:
                with suppress(FileNotFoundError):
                    stale.unlink()


def _empty_catalog(folder: Path, files: list[str]) -> Path | None:
    """The empty catalog, when built, for a store of up to EMPTY_START_BYTES of data files that has
    no older catalog. It names no data file, so it serves wherever the store is."""
    path = _empty_path(folder)
    if not path.exists() or _total_bytes(files, EMPTY_START_BYTES) > EMPTY_START_BYTES:
        return None
    return path


def _empty_path(folder: Path) -> Path:
    return folder / f"{EMPTY}-{views_digest()}.duckdb"


def _total_bytes(files: list[str], past: int) -> int:
    """The files' size together, counted until it passes `past` (a big store has many files)."""
    total = 0
    for file in files:
        with suppress(OSError):
            total += os.path.getsize(file)
        if total > past:
            break
    return total


def readable_version(root: Path, version: int, built_soon: bool = False) -> int:
    """The version a reader should open for `version` without waiting for a build it does not
    need: `version` itself, unless its catalog is missing and another builder holds the build lock
    right now (the service's committer, another process) or will take it in a moment
    (`built_soon`: a committer of this process between its commit and its catalog); then the newest
    version whose catalog is built, if any. A missing catalog nobody is building is built by the
    reader, as before: so a query after `tracewh ingest` returns sees what it committed."""
    path = catalog_path(root, version)
    if path.exists() or not (built_soon or _build_running(path.parent)):
        return version
    older = _older_catalog(path.parent, _identity(root), version)
    return _version_of(older) if older is not None else version


def _build_running(folder: Path) -> bool:
    lock_path = folder / ".build.lock"
    if not lock_path.exists():
        return False
    with open(lock_path, "a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(lock, fcntl.LOCK_UN)
    return False


def _older_catalog(folder: Path, identity: str, version: int) -> Path | None:
    """The newest catalog of the same views and store for a version before `version`."""
    older = [p for p in folder.glob(f"v*-{identity}.duckdb") if _version_of(p) < version]
    return max(older, key=_version_of, default=None)


def _version_of(path: Path) -> int:
    return int(path.name[1:].split("-", 1)[0])


def _build(path: Path, files: list[str], older: Path | None = None) -> None:
    """Write the catalog to a private file, then publish it by an atomic rename. From `older` when
    that catalog can be brought up to `files` (refresh), else from scratch."""
    building = path.with_name(f".building-{os.getpid()}-{uuid.uuid4().hex[:8]}.duckdb")
    started = time.monotonic()
    try:
        if older is not None and _refreshed(building, older, files):
            how = f"derived from {older.name}"
        else:
            _discard(building)
            _build_full(building, files)
            how = "built from scratch"
        os.replace(building, path)  # readers see the whole file or none
        log.debug("catalog %s %s in %.3f s", path.name, how, time.monotonic() - started)
    finally:
        _discard(building)


def _discard(building: Path) -> None:
    for leftover in (building, building.with_suffix(".duckdb.wal")):
        with suppress(FileNotFoundError):
            leftover.unlink()


def _build_full(building: Path, files: list[str]) -> None:
    from .engine import define_events_raw

    con = duckdb.connect(str(building))
    try:
        define_events_raw(con, files)
        corrections = _record_files(con, files)
        _record_views(con, load_views())
        con.execute(f"CREATE TABLE {RUN_TRACES} AS SELECT DISTINCT run_id, trace_id FROM events_raw")
        for view in load_views():
            con.execute(NOTHING_SUPERSEDED if view.name == "events" and not corrections else view.sql)
            if view.materialize:
                _materialize(con, view.name)
        con.execute("CHECKPOINT")
    finally:
        con.close()


def _record_views(con: duckdb.DuckDBPyConnection, views: tuple[ViewDef, ...]) -> None:
    con.execute(f"CREATE TABLE {VIEWS} (position INTEGER, name VARCHAR, sql VARCHAR, depends VARCHAR[], "
                "materialize BOOLEAN, local_by VARCHAR, within VARCHAR, kinds VARCHAR[])")
    con.executemany(f"INSERT INTO {VIEWS} VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    [(i, v.name, v.sql, sorted(v.depends), v.materialize, v.local_by, v.within,
                      None if v.kinds is None else sorted(v.kinds)) for i, v in enumerate(views)])


def _recorded_views(con: duckdb.DuckDBPyConnection) -> tuple[ViewDef, ...]:
    """The views as recorded (a catalog recorded without their kinds fails here: built again in full)."""
    rows = con.execute(f"SELECT name, sql, depends, materialize, local_by, within, kinds FROM {VIEWS} "
                       "ORDER BY position").fetchall()
    return tuple(ViewDef(name, "", sql, Path(f"{name}.sql"), frozenset(depends), materialize, local_by, within,
                         None if kinds is None else frozenset(kinds))
                 for name, sql, depends, materialize, local_by, within, kinds in rows)


def _record_files(con: duckdb.DuckDBPyConnection, files: list[str]) -> int:
    """Add `files` to the catalog's file list, each with its count of correction events and its
    runs (one pass over the files); the store's correction events in all."""
    con.execute(f"CREATE TABLE IF NOT EXISTS {FILES} (path VARCHAR PRIMARY KEY, corrections BIGINT NOT NULL)")
    con.execute(f"CREATE TABLE IF NOT EXISTS {FILE_RUNS} (path VARCHAR NOT NULL, run_id VARCHAR)")
    if files:
        con.execute("CREATE OR REPLACE TEMP TABLE tracewh_file_counts AS SELECT filename AS path, run_id, "
                    f"count(supersedes) AS corrections FROM read_parquet({literal_list(files)}, filename = true, "
                    "union_by_name = true) GROUP BY ALL")
        con.execute(f"INSERT INTO {FILES} SELECT path, sum(corrections) FROM tracewh_file_counts GROUP BY path")
        con.execute(f"INSERT INTO {FILE_RUNS} SELECT path, run_id FROM tracewh_file_counts")
        con.execute("DROP TABLE tracewh_file_counts")
        # a file of no rows has no group above, yet is part of the version all the same
        con.execute(f"INSERT OR IGNORE INTO {FILES} SELECT unnest({literal_list(files)}), 0")
    return _corrections(con)


def _corrections(con: duckdb.DuckDBPyConnection) -> int:
    """The correction events of the files the catalog lists."""
    return con.execute(f"SELECT coalesce(sum(corrections), 0) FROM {FILES}").fetchone()[0]


def _refreshed(building: Path, older: Path, files: list[str]) -> bool:
    """Bring a copy of the `older` catalog up to `files` at `building`. False when it cannot be
    (files removed by `optimize`, a building block the older catalog could not compute, a
    refresh the data makes fail): the caller then builds from scratch, so no answer depends on
    which way the catalog was made."""
    if older.with_suffix(".duckdb.wal").exists():
        return False  # not a checkpointed catalog: a builder died while writing it
    try:
        shutil.copyfile(older, building)
    except FileNotFoundError:  # deleted by a user meanwhile (builders remove catalogs under the lock only)
        return False
    flushing = _flushed_meanwhile(building)
    con = duckdb.connect(str(building))
    con.execute("SET parquet_metadata_cache = true")  # committed files never change; each view reads their footers
    if DERIVATION_THREADS is not None:
        con.execute(f"SET threads = {DERIVATION_THREADS}")
    try:
        return _refresh(con, files)
    except duckdb.Error:
        return False
    finally:
        con.close()
        flushing.join()


def _flushed_meanwhile(copy: Path) -> threading.Thread:
    """The copy written to disk on a thread while the derivation's statements run. Its closing
    CHECKPOINT syncs the whole file, copy and all: 36 MB of a live scale-1 store's catalog took
    45-80 ms there, the derivation's largest statement, where the copy's own pages are written by
    the time it runs (fsync holds no GIL)."""

    def flush() -> None:
        with suppress(OSError), open(copy, "rb") as handle:  # a failure leaves the sync to the CHECKPOINT
            os.fsync(handle.fileno())

    thread = threading.Thread(target=flush, name="tracewh-catalog-flush", daemon=True)
    thread.start()
    return thread


def _refresh(con: duckdb.DuckDBPyConnection, files: list[str]) -> bool:
    from .engine import define_events_raw

    tables = {name for (name,) in con.execute(
        "SELECT table_name FROM duckdb_tables() WHERE database_name = current_database()").fetchall()}
    if not {FILES, VIEWS, RUN_TRACES, FILE_RUNS} <= tables:
        return False
    views = _recorded_views(con)
    if any(_table(v.name) not in tables for v in views if v.materialize):
        return False  # a view the older data broke stays a plain view there: a full build decides anew
    held = {path for (path,) in con.execute(f"SELECT path FROM {FILES}").fetchall()}
    new = [f for f in files if f not in held]
    if gone := sorted(held - set(files)):
        outputs = _compaction_outputs(con, gone, new)
        if outputs is None:
            return False  # files removed, and not by a compaction of their events alone: built from scratch
        _record_compaction(con, gone, outputs)
        new = [f for f in new if f not in outputs]  # what commits after the compaction added, if any
    if not new and not gone:
        return True
    define_events_raw(con, files)
    if not new:  # a compaction alone: every computed row stands
        con.execute("CHECKPOINT")
        return True
    corrected_before = _corrections(con)
    if _record_files(con, new) and not corrected_before:  # the first correction: `events` hides from now on
        con.execute(next(v.sql for v in views if v.name == "events"))
    scope = Scope(con, new, views)
    changed: dict[str, bool] = {"events_raw": scope.touched, "events": scope.touched}
    for view in views:
        if view.name in scope.kept:  # its table's rows are its rows now
            changed[view.name] = False
        elif view.materialize and view.local_by == "trace_id":
            changed[view.name] = scope.touched and _refresh_pairs(con, view, scope)
        elif view.materialize and view.local_by:
            changed[view.name] = scope.may_have_rows(view, changed) and _refresh_rows(con, view, scope)
        elif view.materialize:
            changed[view.name] = _reads_change(view, changed, scope)
            if changed[view.name]:  # the catalog's view reads the table: only the table is made again
                con.execute(f"CREATE OR REPLACE TABLE {_table(view.name)} AS {view.query}")
    con.execute("CHECKPOINT")
    return True


def _compaction_outputs(con: duckdb.DuckDBPyConnection, gone: list[str], came: list[str]) -> set[str] | None:
    """Of the files that came, those `optimize` wrote from the files that went: the files holding
    event ids of those only (a commit adds event ids the store never held). None unless they hold
    exactly the events that went, compared by event id as multisets (a store holds an event id
    once, and `optimize` rewrites rows without changing them): then the files went by a compaction
    of their events alone, every row the catalog computed stands, and the other files that came
    are commits made after it (the service's committer derives a compaction's catalog with the
    next commit's, docs/catalog.md)."""
    if not came:
        return None
    con.execute(f"CREATE OR REPLACE TEMP TABLE tracewh_went AS "
                f"SELECT event_id FROM read_parquet({literal_list(gone)}, union_by_name = true)")
    con.execute(f"CREATE OR REPLACE TEMP TABLE tracewh_came AS SELECT filename AS path, event_id "
                f"FROM read_parquet({literal_list(came)}, filename = true, union_by_name = true)")
    outputs = {path for (path,) in con.execute(
        "SELECT path FROM tracewh_came GROUP BY path HAVING bool_and(event_id IN (SELECT event_id FROM tracewh_went))"
    ).fetchall()}
    written = (f"SELECT event_id FROM tracewh_came "
               f"WHERE path IN (SELECT unnest({literal_list(sorted(outputs))}::VARCHAR[]))")
    differ = con.execute(f"SELECT EXISTS (FROM tracewh_went EXCEPT ALL {written}) "
                         f"OR EXISTS ({written} EXCEPT ALL FROM tracewh_went)").fetchone()[0]
    con.execute("DROP TABLE tracewh_went")
    con.execute("DROP TABLE tracewh_came")
    return None if differ else outputs


def _record_compaction(con: duckdb.DuckDBPyConnection, gone: list[str], outputs: set[str]) -> None:
    """The file list after a compaction: the files that went out, the files it wrote in."""
    for table in (FILES, FILE_RUNS):
        con.execute(f"DELETE FROM {table} WHERE path IN (SELECT unnest({literal_list(gone)}::VARCHAR[]))")
    _record_files(con, sorted(outputs))


def _touched_runs(con: duckdb.DuckDBPyConnection, new: list[str], new_raw: str, corrected: str, new_pairs: str
                  ) -> tuple[list[str], list[str]]:
    """The runs whose events differ between the older version and this one, as (runs the older
    version had, new runs): the runs of the new files' events (`new_raw`; recorded already in the
    file-runs table), the runs of the events their corrections hide (the table `corrected`), and
    every run that shares a trace id with those, and so on (a view declared run-local may join
    events on trace_id: then a trace's runs are one unit). The (run, trace) pairs the older version
    did not have are made the table `new_pairs` and added to the run-traces table."""
    runs = {run for (run,) in con.execute(f"SELECT DISTINCT run_id FROM {FILE_RUNS} "
                                          f"WHERE path IN ({_literals(new)})").fetchall()}
    runs |= {run for (run,) in con.execute(f"SELECT DISTINCT run_id FROM {corrected}").fetchall()}
    had = {run for (run,) in con.execute(
        f"SELECT DISTINCT run_id FROM {RUN_TRACES} WHERE {_among('run_id', runs)}").fetchall()}
    # the pairs are new but for runs the store had (a new run's pairs are all new)
    con.execute(f"CREATE TABLE {new_pairs} AS SELECT DISTINCT run_id, trace_id FROM {new_raw} "
                f"EXCEPT SELECT run_id, trace_id FROM {RUN_TRACES} WHERE {_among('run_id', had)}")
    con.execute(f"INSERT INTO {RUN_TRACES} SELECT * FROM {new_pairs}")
    while runs:
        linked = {run for (run,) in con.execute(f"""
            SELECT DISTINCT run_id FROM {RUN_TRACES} WHERE trace_id IN (
                SELECT trace_id FROM {RUN_TRACES} WHERE run_id IN ({_literals(runs)}) AND trace_id IS NOT NULL)
            """).fetchall()} - runs
        if not linked:
            break
        runs |= linked
        had |= linked  # a run linked to the touched ones has events already: else it would be one of them
    return sorted(had), sorted(runs - had)


def _literals(values: Iterable[str]) -> str:
    """SQL literals for `x IN (...)`: a list of constants lets DuckDB filter the Parquet scan itself."""
    return ", ".join(map(literal, values))


def _among(column: str, values: Iterable[str]) -> str:
    """`column IN (values)`; `false` for none, which DuckDB answers without reading anything."""
    listed = _literals(values)
    return f"{column} IN ({listed})" if listed else "false"


class Scope:
    """The touched runs' events, before (in the older version) and now, each in an in-memory
    database of its own (`tracewh_before`, `tracewh_after`) where views are created again as
    needed: there a run-local view's rows are exactly its rows for the touched runs. The events
    are read from the files that hold the touched runs and from the files that hold corrections,
    never from every file of the store. Trace-local blocks have a third database,
    `tracewh_traces`, made when the first asks: the events of the touched (run, trace) pairs only."""

    def __init__(self, con: duckdb.DuckDBPyConnection, new: list[str], views: tuple[ViewDef, ...]):
        from .engine import events_raw_query

        self.con, self.views, self.by_name = con, views, {v.name: v for v in views}
        # the run-local blocks: in tracewh_after each is read from its refreshed table
        self.blocks = {v.name for v in views if v.materialize and v.local_by}
        self.has_rows: dict[str, bool] = {}  # Scope.changed's answers
        home = con.execute("SELECT current_database()").fetchone()[0]
        self.home = '"' + home.replace('"', '""') + '"'
        self.created: dict[str, set[str]] = {"tracewh_before": {"events"}, "tracewh_after": {"events"}}
        # what a check of a plain run-local view (Scope.changed) may read in `tracewh_before`
        self.checked = {needed.name for view in views if view.local_by and not view.materialize
                        for needed in _needed(views, view.name)}
        con.execute("ATTACH ':memory:' AS tracewh_before")
        con.execute("ATTACH ':memory:' AS tracewh_after")
        con.execute(f"CREATE VIEW tracewh_after.new_raw AS {events_raw_query(new)}")
        self.added = set(new)
        fixed = {path for (path,) in con.execute(f"SELECT path FROM {FILES} WHERE corrections > 0").fetchall()}
        # the new files' corrections; the older ones'
        self.new_fixes, self.fixes = bool(fixed & self.added), sorted(fixed - self.added)
        # the (run, trace) pairs of the events the new corrections hide (in any file)
        con.execute("CREATE TABLE tracewh_after.corrected AS SELECT DISTINCT run_id, trace_id FROM events_raw "
                    "WHERE event_id IN (SELECT supersedes FROM tracewh_after.new_raw)" if self.new_fixes else
                    "CREATE TABLE tracewh_after.corrected (run_id VARCHAR, trace_id VARCHAR)")
        had, fresh = _touched_runs(con, new, "tracewh_after.new_raw", "tracewh_after.corrected",
                                   "tracewh_after.new_pairs")
        self.touched, self.had, self.runs = bool(had or fresh), had, had + fresh
        con.execute(f"CREATE TABLE tracewh_after.touched_runs AS "
                    f"SELECT unnest({literal_list(had + fresh)}::VARCHAR[]) AS key")
        old_runs = self._old_events(self._older_files(had), _among("run_id", had))
        # a correction logged under another run hides a touched run's event all the same
        old_fixes = self._old_fixes(_among("run_id", had + fresh))
        self.events_sql = next(v.sql for v in views if v.name == "events")
        keep = self.among_touched("run_id")
        # before: a view, read only by what asks (the event ids a refresh replaces, a few checks)
        self._in("tracewh_before", lambda: self._events([old_runs, old_fixes], keep,
                                                        self.events_sql if self.fixes else None, as_table=False))
        # now: computed once into a table when every touched run is new (the commit's events, which
        # every run-local block reads); a view when old runs are touched, whose history a table
        # would copy whole at every commit, where each block reads only what it asks for (the
        # partitions of the event kinds it filters on, the columns it needs)
        self._in("tracewh_after", lambda: self._events(["SELECT * FROM new_raw", old_runs, old_fixes], keep,
                                                       self._events_sql_now(), as_table=not had))

    def _older_files(self, runs: list[str]) -> list[str]:
        """The files of the older version that hold events of `runs`."""
        return sorted(path for (path,) in self.con.execute(
            f"SELECT DISTINCT path FROM {FILE_RUNS} WHERE {_among('run_id', runs)}").fetchall() if path not in self.added)

    @staticmethod
    def _old_events(files: list[str], where: str) -> str:
        """The events of `files` that `where` keeps."""
        from .engine import events_raw_query

        return f"SELECT * FROM ({events_raw_query(files)}) WHERE {where}"

    def _old_fixes(self, scoped: str) -> str | None:
        """The older files' corrections outside the scope (`scoped`: its raw events' condition)."""
        from .engine import events_raw_query

        return (f"SELECT * FROM ({events_raw_query(self.fixes)}) WHERE supersedes IS NOT NULL AND NOT ({scoped})"
                if self.fixes else None)

    def _events_sql_now(self) -> str | None:
        """The `events` view for the new version's scope; None when no correction can apply."""
        return self.events_sql if self.fixes or self.new_fixes else None

    def _in(self, db: str, work: Callable[[], object]) -> None:
        """Run `work` with `db` as the database unqualified names are created in and read from."""
        self.con.execute(f"USE {db}")
        try:
            work()
        finally:
            self.con.execute(f"USE {self.home}")

    def _events(self, raw: list[str | None], keep: str, events_sql: str | None, as_table: bool) -> None:
        """`events` of the scope (`keep`), by the `events` view itself (`events_sql`; None when no
        correction can apply) over the raw events it needs; computed once into a table, or a view."""
        self.con.execute("CREATE VIEW events_raw AS " + " UNION ALL ".join(part for part in raw if part))
        self.con.execute(events_sql or NOTHING_SUPERSEDED)
        self.con.execute("ALTER VIEW events RENAME TO all_events")
        self.con.execute(f"CREATE {'TABLE' if as_table else 'VIEW'} events AS SELECT * FROM all_events WHERE {keep}")

    def _traces(self) -> None:
        """Once: `tracewh_traces` with the touched pairs (those of the new events and of the events
        their corrections hide) and their events now: the new files', and the older files' that hold
        a pair the older version had (a new pair has no older event: most commits of a long run
        read none of its older files)."""
        if "tracewh_traces" in self.created:
            return
        self.con.execute("ATTACH ':memory:' AS tracewh_traces")
        self.con.execute("CREATE TABLE tracewh_traces.touched_pairs AS SELECT DISTINCT run_id, trace_id FROM "
                         "tracewh_after.new_raw UNION SELECT run_id, trace_id FROM tracewh_after.corrected")
        self.created["tracewh_traces"] = {"events"}
        if not self.had:  # every touched run is new: all its events are of touched pairs, already a table
            self.con.execute("CREATE VIEW tracewh_traces.events AS SELECT * FROM tracewh_after.events")
            return
        pairs = self.con.execute("SELECT run_id, trace_id FROM tracewh_traces.touched_pairs "
                                 "EXCEPT SELECT run_id, trace_id FROM tracewh_after.new_pairs").fetchall()
        runs, traces = sorted({run for run, _ in pairs}), sorted({t for _, t in pairs if t is not None})
        # a superset of the older pairs' events, as constants DuckDB filters the scan with; then the
        # touched pairs exactly (never NULL: NOT of it keeps every other correction, one without a
        # trace id included; with no older pair it is false, and every older correction is kept)
        near = f"{_among('run_id', runs)} AND (trace_id IS NOT NULL AND {_among('trace_id', traces)}" + \
               (" OR trace_id IS NULL)" if any(t is None for _, t in pairs) else ")")
        # of the runs' older files, those holding the older pairs' events: found by reading two
        # columns of each (DuckDB reads every column of a filtered scan), then read whole
        older = self._older_files(runs)
        holding = sorted(path for (path,) in self.con.execute(
            f"SELECT DISTINCT filename FROM read_parquet({literal_list(older)}, filename = true, union_by_name = true) "
            f"WHERE {near}").fetchall()) if older else []
        raw = ["SELECT * FROM tracewh_after.new_raw", self._old_events(holding, near) if holding else None,
               self._old_fixes(near)]
        self._in("tracewh_traces", lambda: self._events(raw, self.in_pairs("all_events"), self._events_sql_now(),
                                                        as_table=True))

    def old(self, table: str) -> str:
        """Whether a row of `table` may be of a touched run: of one the store had (a new run has
        no rows yet), as constants, unless there are very many (then of any touched run)."""
        if len(self.had) <= MANY_RUNS:
            return _among(f"{table}.run_id", self.had)
        return self.among_touched(f"{table}.run_id")

    def in_pairs(self, table: str) -> str:
        """Whether a row of `table` is of a touched (run, trace) pair (no trace id: the run's pair of those)."""
        return (f"EXISTS (SELECT 1 FROM tracewh_traces.touched_pairs AS p WHERE p.run_id = {table}.run_id "
                f"AND p.trace_id IS NOT DISTINCT FROM {table}.trace_id)")

    def keep_before(self, view: ViewDef, table: str) -> None:
        """A run-local block's rows of the touched runs in the older version, kept before its refresh
        replaces them: they are its rows over the touched runs' events before (its declaration), so
        a check of a view over it in `tracewh_before` reads them instead of computing them again.
        A trace-local block's refresh replaces the rows of the touched pairs only: those are copied,
        and the rest are read from the table, where they stay."""
        if view.name not in self.checked:
            return
        if view.local_by == "trace_id":
            self.con.execute(f"CREATE TABLE tracewh_before.tracewh_pairs_{view.name} AS "
                             f"SELECT * FROM {table} WHERE {self.old(table)} AND {self.in_pairs(table)}")
            self.con.execute(f"CREATE VIEW tracewh_before.{view.name} AS SELECT * FROM {self.home}.{table} "
                             f"WHERE {self.old(table)} AND NOT {self.in_pairs(table)} "
                             f"UNION ALL SELECT * FROM tracewh_before.tracewh_pairs_{view.name}")
        else:
            self.con.execute(f"CREATE TABLE tracewh_before.{view.name} AS SELECT * FROM {table} WHERE {self.old(table)}")
        self.created["tracewh_before"].add(view.name)

    def relation(self, view: ViewDef, db: str = "tracewh_after") -> str:
        """`view` over the scope's events in `db` (its building blocks computed once)."""
        if db == "tracewh_traces":
            self._traces()
        # what a view made already reads is there; so is what a block read from its table reads
        # (tracewh_after, below), and neither is made again
        stop = self.created[db] | (self.blocks if db == "tracewh_after" else set())
        self._in(db, lambda: self._create(_needed(self.views, view.name, stop), db, view.name))
        return f"{db}.{view.name}"

    def _create(self, views: list[ViewDef], db: str, target: str) -> None:
        for needed in views:
            if needed.name in self.created[db]:
                continue
            local_block = needed.name in self.blocks
            if local_block and ((db == "tracewh_after" and needed.name != target) or
                                (db == "tracewh_before" and needed.name in self.kept)):
                # refreshed (or skipped, having no rows here) before `target`, blocks going in
                # dependency order: its table's rows of the touched runs are its rows here (and,
                # for a block the commit kept as it was, its rows before too)
                self.con.execute(f"CREATE VIEW {needed.name} AS SELECT * FROM {self.home}.{_table(needed.name)} "
                                 f"WHERE {self.among_touched('run_id')}")
            elif local_block:  # computed once, as a table
                self.con.execute(f"CREATE TABLE {needed.name} AS {needed.query}")
            else:
                self.con.execute(needed.sql)
            self.created[db].add(needed.name)

    def among_touched(self, column: str) -> str:
        """Whether `column` is a touched run: as constants (which DuckDB filters a scan with)
        unless there are very many (a store's first catalog derived from the empty one)."""
        if len(self.runs) <= MANY_RUNS:
            return _among(column, self.runs)
        return f"{column} IN (SELECT key FROM tracewh_after.touched_runs)"

    def changed(self, view: ViewDef) -> bool:
        """Whether a run-local view has rows for the touched runs, before or now (if not, it is
        unchanged: its rows of the other runs are the same)."""
        if view.name not in self.has_rows:
            self.has_rows[view.name] = any(
                self.con.execute(f"SELECT EXISTS (FROM {self.relation(view, db)})").fetchone()[0]
                for db in ("tracewh_before", "tracewh_after"))
        return self.has_rows[view.name]

    def may_have_rows(self, view: ViewDef, refreshed: dict[str, bool]) -> bool:
        """Whether a run-local view may have rows for the touched runs: not when it is declared
        `within` a view that has none, before or now (the blocks of another benchmark's runs).
        A `within` view that is a run-local block was refreshed first (`refreshed`: whether its
        refresh deleted or inserted any row, which says just that); a plain one is asked."""
        if not self.touched or view.within is None:
            return self.touched
        within = self.by_name[view.within]
        if not (within.materialize and within.local_by == "run_id"):
            return self.changed(within)
        if within.name in self.kept:  # not refreshed: its table says
            return self.con.execute(f"SELECT EXISTS (FROM {_table(within.name)} "
                                    f"WHERE {self.among_touched('run_id')})").fetchone()[0]
        return refreshed[within.name]

    def unchanged_by_kinds(self, view: ViewDef) -> bool:
        """Whether the commit leaves `view`'s rows as they were: it holds no correction (which may hide
        an event of any kind) and no event of the kinds its rows derive from (registry.kinds_read)."""
        if self.new_fixes:
            return False
        kinds = kinds_read(self.by_name, view.name)
        return kinds is not None and not kinds & self.new_kinds

    @cached_property
    def kept(self) -> frozenset[str]:
        """The building blocks the commit leaves as they were: their tables' rows are their rows
        before and now, so they are not refreshed."""
        return frozenset(v.name for v in self.views if v.materialize and self.unchanged_by_kinds(v))

    @cached_property
    def new_kinds(self) -> frozenset[str]:
        """The kinds of the commit's events (a partition column: read from the files' paths)."""
        rows = self.con.execute("SELECT DISTINCT kind FROM tracewh_after.new_raw").fetchall()
        return frozenset(kind for (kind,) in rows)


def _refresh_pairs(con: duckdb.DuckDBPyConnection, view: ViewDef, scope: Scope) -> bool:
    """Replace a trace-local view's rows of the touched (run, trace) pairs by their rows now; whether there were any."""
    table = _table(view.name)
    scope.relation(view, "tracewh_traces")  # the pairs first: keep_before reads them
    scope.keep_before(view, table)
    deleted = con.execute(f"DELETE FROM {table} WHERE {scope.old(table)} AND {scope.in_pairs(table)}").fetchone()[0]
    # only the pairs' rows: the scope's events_raw holds other pairs' corrections too (see _refresh_rows)
    inserted = con.execute(f"INSERT INTO {table} BY NAME SELECT * FROM tracewh_traces.{view.name} AS v "
                           f"WHERE {scope.in_pairs('v')}").fetchone()[0]
    return bool(deleted or inserted)


def _refresh_rows(con: duckdb.DuckDBPyConnection, view: ViewDef, scope: Scope) -> bool:
    """Replace a run-local view's rows of the touched runs by their rows now; whether there were any."""
    table = _table(view.name)
    scope.keep_before(view, table)
    deleted = con.execute(f"DELETE FROM {table} WHERE {scope.old(table)}").fetchone()[0]
    # Only the touched runs' rows: a view over `events_raw` (judgments) also sees, in the scope,
    # the corrections other runs logged, whose own rows are in the table already.
    inserted = con.execute(f"INSERT INTO {table} BY NAME SELECT * FROM {scope.relation(view)} "
                           f"WHERE {scope.among_touched('run_id')}").fetchone()[0]
    return bool(deleted or inserted)


def _reads_change(view: ViewDef, changed: dict[str, bool], scope: Scope) -> bool:
    """Whether a view's rows may differ from the older version's: something it reads changed. A
    plain view declared run-local says so itself (Scope.changed); any other plain view changed
    if what it reads did. Materialized views refreshed before it are in `changed`."""

    def reads(name: str) -> bool:
        if name not in changed:
            if name not in scope.by_name:  # not a view of ours (a table function?): assume it changed
                return True
            plain = scope.by_name[name]
            if scope.unchanged_by_kinds(plain):
                changed[name] = False
            elif plain.local_by:
                changed[name] = scope.may_have_rows(plain, changed) and scope.changed(plain)
            else:
                changed[name] = any(reads(d) for d in plain.depends)
        return changed[name]

    return any(reads(d) for d in view.depends)


def _needed(views: tuple[ViewDef, ...], name: str, stop: Collection[str] = ()) -> list[ViewDef]:
    """View `name` and every view it reads, in creation order (not following the reads of `stop`)."""
    wanted = reads_all({v.name: v for v in views}, name, stop)
    return [v for v in views if v.name in wanted]


def _table(view: str) -> str:
    return f"tracewh_cache_{view}"


def _materialize(con: duckdb.DuckDBPyConnection, name: str) -> None:
    """Compute view `name` once into a table the view then reads. Where the store's data makes
    the view fail (a value it cannot cast, say), it stays a plain view: querying it reports
    that error, and every other query of the store still works (a fuzzed DecisionBench value
    failed the whole build, and with it `select count(*) from events`)."""
    table = _table(name)
    try:
        con.execute(f"CREATE TABLE {table} AS SELECT * FROM {name}")
    except duckdb.Error:
        return
    con.execute(f"CREATE OR REPLACE VIEW {name} AS SELECT * FROM {table}")


def _remove_stale(folder: Path, digest: str, keep: Path) -> None:
    """Catalogs of other view digests (or store locations), and all but the newest KEEP_VERSIONS,
    never `keep` (just built for an old version: `--as-of` is about to open it). A reader that
    has one open keeps reading it: an unlinked file lives on while it is open."""
    catalogs = sorted(p for p in folder.glob("v*.duckdb") if p != keep)
    current = [p for p in catalogs if p.stem.endswith(digest)]
    for path in [p for p in catalogs if p not in current] + current[:-KEEP_VERSIONS]:
        with suppress(FileNotFoundError):
            path.unlink()
