"""The append-only event store: one Delta Lake table of hive-partitioned, zstd Parquet.

Layout of a warehouse directory:

    events/          the Delta table (benchmark=<b>/kind=<k>/part-*.parquet, _delta_log/)
    _staging/        batches being prepared; never part of the store
    .writer.lock     held by the one process committing at a time

The directory is resolved once (deltalog.resolve_root); every file location compared,
deleted or handed to DuckDB is a plain absolute path under it (deltalog.data_files).
Files are written with the user's umask, never wider than 0644 (permissions.store_umask).

Delta's transaction log gives atomic commits and time travel. The lock serialises
writers so that "was this digest already ingested?" and the commit that answers it
cannot interleave (Delta's optimistic appends alone would let two processes
ingesting the same archive both land it).
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
from deltalake import CommitProperties, DeltaTable, WriterProperties
from deltalake.exceptions import TableNotFoundError

from ..errors import StoreError
from ..schema import ARROW_SCHEMA, PARTITION_COLUMNS
from .batchdb import batch_connection
from .datafiles import ROW_GROUP_ROWS, TARGET_FILE_BYTES, write_data_files
from .deltalog import LogIndex, data_files, file_sizes, same_file_names
from .layout import latest_version, resolve_root
from .permissions import store_umask
from .quarantine import Quarantine
from .sqltext import literal, literal_list
from .staging import remove_dead, staging_folder

META = "tracewh."  # prefix of our keys in Delta commit metadata
LEDGER = "batches"  # META + LEDGER: the batches of a commit that holds several, as a JSON list (ledger())
NEW_EVENTS = "new-events.parquet"  # inside a staging folder: what the commit will add


@dataclass
class Batch:
    """One committed ingest batch, as `tracewh log` shows it."""

    version: int
    time: datetime
    batch_id: str
    source: str
    digest: str  # of the source content
    key: str  # digest + attrs: what makes a re-ingest a repeat
    adapters: str  # formats read, comma-separated
    events: int
    duplicates: int
    kinds: dict[str, int] = field(default_factory=dict)
    operation: str = "ingest"  # or a maintenance commit's (optimize), which adds no batch


@dataclass
class CommitResult:
    version: int | None  # None when nothing was committed
    added: int
    duplicates: int
    already_ingested: bool = False
    kinds: dict[str, int] = field(default_factory=dict)
    quarantined: int = 0


@dataclass
class Held:
    """Events the quality gate failed: event_id -> reasons."""

    reasons: dict[str, list[str]]
    suites_version: str


ORPHANS_EVERY_S = 60.0  # how often a long-lived writer looks for files a dead writer left (Store.commit)


class Store:
    def __init__(self, root: str | Path):
        self.root = resolve_root(root)
        self.table_path = self.root / "events"
        self._stored_ids = StoredIds()  # kept between commits: a long-lived writer reads each file once
        self._log = LogIndex(self.table_path, batch_keys)  # likewise each commit of the log
        self._orphans_sought: float | None = None  # when this writer last looked for orphans (monotonic)

    # -- reading --------------------------------------------------------------

    def table(self, version: int | None = None) -> DeltaTable | None:
        try:
            return DeltaTable(str(self.table_path), version=version)
        except TableNotFoundError:
            if version is not None:
                raise StoreError(f"{self.root} has no events table, so no version {version}") from None
            return None
        except Exception as e:  # deltalake raises a bare Exception for unknown versions
            if version is not None and "version" in str(e).lower():
                latest = self.version()
                raise StoreError(f"version {version} does not exist; the store is at version {latest}") from None
            raise

    def version(self) -> int | None:
        """The latest version, read off the log's file names (no table load)."""
        return latest_version(self.table_path)

    def file_sizes(self) -> dict[Path, int]:
        """The latest version's data files and their sizes in bytes, as the Delta log records them."""
        table = self.table()
        return {} if table is None else file_sizes(table, self.table_path)

    def files(self, version: int | None = None) -> list[str]:
        """Absolute paths of the Parquet files that make up the store at `version`."""
        table = self.table(version)
        return [] if table is None else data_files(table, self.table_path)

    def batches(self) -> list[Batch]:
        table = self.table()
        return [] if table is None else _batches(table)

    def log(self) -> list[Batch]:
        """The batches and the maintenance commits between them (optimize), oldest first: every
        version a user can pass to --as-of, but the table's creation."""
        table = self.table()
        return [] if table is None else _batches(table, maintenance=True)

    def has_batch(self, key: str) -> bool:
        """Whether a batch with this key is committed (read off the log's new commits only)."""
        keys = self._log.keys()
        return key in keys if keys is not None else any(b.key == key for b in self.batches())

    # -- writing --------------------------------------------------------------

    @contextmanager
    def lock(self) -> Iterator[None]:
        with store_umask(self.root):
            self.root.mkdir(parents=True, exist_ok=True)
            with open(self.root / ".writer.lock", "a") as handle:
                fcntl.flock(handle, fcntl.LOCK_EX)  # released by the OS if this process dies
                try:
                    yield
                finally:
                    fcntl.flock(handle, fcntl.LOCK_UN)

    @contextmanager
    def staging(self) -> Iterator[Path]:
        """A private folder for one batch in preparation, removed afterwards (staging.py)."""
        with store_umask(self.root), staging_folder(self.root / "_staging") as path:
            yield path

    def remove_dead_staging(self) -> list[Path]:
        """Remove staging folders whose process is gone; returns them."""
        return remove_dead(self.root / "_staging")

    def commit(self, staged: Path, meta: dict[str, str], held: Held | None = None,
               con: duckdb.DuckDBPyConnection | None = None) -> CommitResult:
        """Append the staged events not already stored, as one Delta commit.

        `staged` is a folder of part-*.parquet files in the event schema; `meta` must hold
        `key`, and a key already committed adds nothing. `held`: events the quality gate
        failed, written to the quarantine instead (just before the commit). `con`: the
        batch's DuckDB connection, when the caller has one open already (batchdb.py).
        """
        with self.lock():
            table = self._ensure_table()  # loaded once: each load reads the Delta log
            stored = data_files(table, self.table_path)  # listed once, for the orphans and the dedup
            self._remove_orphans_when_due(table, stored)
            if self.has_batch(meta["key"]):
                return CommitResult(None, 0, 0, already_ingested=True)
            con = con or batch_connection(staged)
            quarantined = 0
            if held is not None:
                quarantined = Quarantine(self.root).hold(staged / "part-*.parquet", held.reasons, meta["key"],
                                                         held.suites_version)
                con.register("excluded", pa.table({"event_id": pa.array(list(held.reasons), pa.string())}))
            new = _new_events(con, staged, stored, self._stored_ids, excluded=held is not None)
            added = sum(new.kinds.values())
            if not added:
                return CommitResult(None, 0, new.staged_rows - quarantined, quarantined=quarantined)
            actions = write_data_files(con, new.files, new.partitions, staged, self.table_path)
            self._append(table, actions, {META + k: v for k, v in (meta | _counts(new, added)).items()})
            return CommitResult(self.version(), added, new.staged_rows - added - quarantined, kinds=new.kinds,
                                quarantined=quarantined)

    def commit_together(self, batches: list[tuple[Path, dict[str, str]]],
                        con: duckdb.DuckDBPyConnection) -> list[CommitResult] | None:
        """Several staged batches as one Delta commit, each a batch of its own in the ledger
        (`tracewh log`, what a repeat is): the lock, the dedup, the data-file writes and the
        commit are paid once, not once a batch (18 small archives: 0.2 s of data-file writes
        together, against 0.8 s one by one). Only for batches whose events are all new. When a key
        is committed or repeated, or an event id is stored already or repeated, it writes nothing
        and returns None: the caller commits them one by one (commit), which decides those cases.
        `batches`: (staged folder, meta) as for commit; `con`: a connection for them all."""
        keys = [meta["key"] for _, meta in batches]
        if len(set(keys)) < len(keys):
            return None
        with self.lock():
            table = self._ensure_table()
            stored = data_files(table, self.table_path)
            self._remove_orphans_when_due(table, stored)
            if any(self.has_batch(key) for key in keys):
                return None
            news = _all_new(con, [staged for staged, _ in batches], stored, self._stored_ids)
            if news is None:
                return None
            # A batch of no events is not committed, as commit() does not commit it alone.
            ledger = [meta | _counts(new, new.staged_rows) for (_, meta), new in zip(batches, news) if new.staged_rows]
            if ledger:
                partitions = _summed([p for new in news for p in new.partitions])
                actions = write_data_files(con, [f for new in news for f in new.files], partitions, batches[0][0],
                                           self.table_path)
                self._append(table, actions, {META + LEDGER: json.dumps(ledger)})
            version = self.version()
            return [CommitResult(version if new.staged_rows else None, new.staged_rows, 0, kinds=new.kinds)
                    for new in news]

    def _append(self, table: DeltaTable, actions: list, metadata: dict[str, str]) -> None:
        table.create_write_transaction(  # the loaded handle: the commit need not read the log again
            actions, mode="append", schema=table.schema(), partition_by=list(PARTITION_COLUMNS),
            commit_properties=CommitProperties(custom_metadata=metadata))

    def optimize(self, target_bytes: int = TARGET_FILE_BYTES) -> dict[str, int | None]:
        """Compact each partition's files smaller than `target_bytes` into files of up to that size,
        in one commit under the writer lock. Rows and values stay as they were, so every query
        answers as before. Nothing is vacuumed: the replaced files stay on disk for the versions
        that list them (`--as-of`), and remove_orphans keeps them, as every commit of the log
        references them."""
        with self.lock():
            table = self.table()
            if table is None:
                return {"files_before": 0, "files_after": 0, "version": None}
            before = len(data_files(table, self.table_path))
            metrics = table.optimize.compact(target_size=target_bytes, writer_properties=_writer_properties(),
                                             commit_properties=CommitProperties(custom_metadata={META + "operation": "optimize"}))
            return {"files_before": before, "files_after": before - metrics["numFilesRemoved"] + metrics["numFilesAdded"],
                    "version": self.version()}

    def _ensure_table(self) -> DeltaTable:
        return self.table() or DeltaTable.create(
            str(self.table_path),
            schema=ARROW_SCHEMA,
            partition_by=list(PARTITION_COLUMNS),
            # The log is the ledger of batches (idempotency, `tracewh log`): keep all of it.
            configuration={"delta.appendOnly": "true", "delta.enableExpiredLogCleanup": "false"},
            name="tracewh_events",
        )

    def unreadable_files(self, version: int | None = None) -> list[tuple[str, str]]:
        """(file, problem) for committed files that are missing, not the size the Delta log
        recorded, or cannot be decoded in full. (Parquet pages carry no checksums here, so a
        same-size bit flip inside data is found only if it breaks decoding.)"""
        table = self.table(version)
        if table is None:
            return []
        return [(str(path), problem) for path, size in file_sizes(table, self.table_path).items()
                if (problem := _file_problem(path, size))]

    def doctor(self) -> dict[str, list[str]]:
        """Remove what interrupted writers left behind; returns what was removed, by kind."""
        with self.lock():
            orphans = [str(p) for p in self.remove_orphans()]
            staging = [str(p) for p in self.remove_dead_staging()]
            log = self.table_path / "_delta_log"
            temp = [p for p in log.glob("*.tmp")] if log.exists() else []
            for p in temp:
                p.unlink()
        return {"uncommitted data files": orphans, "abandoned staging folders": staging,
                "unfinished commit files": [str(p) for p in temp]}

    def _remove_orphans_when_due(self, table: DeltaTable, stored: list[str]) -> None:
        """Orphans at this writer's first commit, then once every ORPHANS_EVERY_S. Looking lists
        every data file on disk, and a live store keeps every file it ever had (nothing is
        vacuumed: 5 a second under OTLP load), so looking at every commit cost a long-lived
        writer more each minute (7-9 ms a commit at 700 files). Orphans take disk space only:
        no query reads a file the log does not list."""
        now = time.monotonic()
        if self._orphans_sought is None or now - self._orphans_sought >= ORPHANS_EVERY_S:
            self.remove_orphans(table, stored)
            self._orphans_sought = now

    def remove_orphans(self, table: DeltaTable | None = None, files: list[str] | None = None) -> list[Path]:
        """Delete data files that no version of the Delta log references (left by a writer that
        died mid-batch). Returns what was deleted. `files`: the loaded table's data files, when the
        caller has listed them already.

        Safe only under the writer lock: every live writer holds it while writing. A file is
        deleted only when it is positively unreferenced: not in the loaded version, not added or
        removed by any commit of the log (old versions stay readable), and no logged file has
        its name. When the log cannot be read whole, nothing is deleted.
        """
        table = table or self.table()
        if table is None:
            return []
        current = set(map(Path, data_files(table, self.table_path) if files is None else files))
        # Only data folders: _delta_log holds Parquet checkpoints, which no add action lists.
        on_disk = self.table_path.glob(f"{PARTITION_COLUMNS[0]}=*/{PARTITION_COLUMNS[1]}=*/*.parquet")
        candidates = [p for p in on_disk if p not in current]
        if not candidates:
            return []
        referenced = self._log.files()
        if referenced is None:
            return []
        names = same_file_names(referenced | current)
        orphans = [p for p in candidates if p not in referenced and p.name not in names]
        for p in orphans:
            p.unlink()
        return orphans


def _writer_properties() -> WriterProperties:
    return WriterProperties(compression="ZSTD", max_row_group_size=ROW_GROUP_ROWS)


class StoredIds:
    """Event ids of committed data files, read once per file: a committed file never changes, so a
    writer that commits again and again (the OTLP receiver) reads only the files added since its
    last commit, where reading every stored id of the benchmark each time grew with the store."""

    def __init__(self) -> None:
        self._by_file: dict[str, pa.Array] = {}

    def table(self, con: duckdb.DuckDBPyConnection, files: list[str]) -> pa.Table:
        """The ids in `files`; ids of files not among them (compacted away, other benchmarks) are let go."""
        unread = [f for f in files if f not in self._by_file]
        self._by_file = {f: self._by_file.get(f, _NO_IDS) for f in files}
        if unread:
            rows = con.sql(f"select filename, list(event_id) as ids from read_parquet({literal_list(unread)}, "
                           "filename = true) group by filename").to_arrow_table()
            for name, ids in zip(rows["filename"].to_pylist(), rows["ids"]):
                self._by_file[name] = ids.values.cast(pa.string())
        return pa.table({"event_id": pa.chunked_array(list(self._by_file.values()), pa.string())})


_NO_IDS = pa.nulls(0, pa.string())


@dataclass
class NewEvents:
    staged_rows: int
    partitions: list[tuple[str, str, int]]  # (benchmark, kind, new rows)
    files: list[Path]  # Parquet files holding exactly the new rows

    @property
    def kinds(self) -> dict[str, int]:
        """New rows per kind, in kind order."""
        kinds: dict[str, int] = {}
        for _, kind, n in sorted(self.partitions, key=lambda p: p[1]):
            kinds[kind] = kinds.get(kind, 0) + n
        return kinds


def _new_events(con: duckdb.DuckDBPyConnection, staged: Path, files: list[str], known: StoredIds,
                excluded: bool = False) -> NewEvents:
    """The staged events minus ids already in `files` (the store's), minus repeats within the
    batch (the lowest seq stays) and minus `excluded` (held in quarantine).

    Decided on (event_id, seq, position) alone, by streamed queries over the staged files: no
    table of the batch's ids is kept (one grew with the batch and held up to DuckDB's whole
    memory limit through the Delta write). When nothing is left out (the usual batch) the
    staged files are the new events as they are; otherwise the kept rows stream through a
    semi-join into staged/NEW_EVENTS, so memory does not grow with payload sizes. What the
    queries leave in DuckDB is dropped before returning (_drop_dedup_tables)."""
    parts = _parts([staged])
    scan = f"read_parquet({literal_list(parts)})"
    try:
        # One pass for the counts: rows, benchmarks and kinds all follow from (benchmark, kind, count).
        # execute, not sql, for a query whose rows are fetched at once: a relation is planned twice.
        counts = con.execute(f"select benchmark, kind, count(*) from {scan} group by all").fetchall()
        staged_rows = sum(n for _, _, n in counts)
        repeats = _repeated_within(con, scan)
        left_out = ["select event_id from excluded"] if excluded else []
        if _stored_already(con, scan, files, {b for b, _, _ in counts}, known):
            left_out.append("select event_id from repeated")
        if not left_out and not repeats:
            return NewEvents(staged_rows, counts, parts)
        not_left_out = "".join(f" and event_id not in ({q})" for q in left_out)
        located = f"read_parquet({literal_list(parts)}, filename = true, file_row_number = true)"
        con.execute(f"""create or replace temp table keep as
            select unnest(arg_min({{'filename': filename, 'file_row_number': file_row_number}}, seq))
            from (select event_id, seq, filename, file_row_number from {located} where true{not_left_out})
            group by event_id""")
        new_events = staged / NEW_EVENTS
        con.execute(f"""copy (select s.* exclude (filename, file_row_number)
                              from {located} s
                              semi join keep k on s.filename = k.filename and s.file_row_number = k.file_row_number)
                        to {literal(new_events)} (format parquet, compression zstd)""")
        kept = con.sql(f"select benchmark, kind, count(*) from read_parquet({literal(new_events)}) group by all")
        return NewEvents(staged_rows, kept.fetchall(), [new_events])
    finally:
        _drop_dedup_tables(con)


def _all_new(con: duckdb.DuckDBPyConnection, staged: list[Path], files: list[str],
             known: StoredIds) -> list[NewEvents] | None:
    """Each folder's events, when every one of them is new: no id stored in `files` already, none
    repeated within or across the folders. None otherwise (then each batch takes _new_events)."""
    parts = _parts(staged)
    scan = f"read_parquet({literal_list(parts)}, filename = true)"
    try:
        counts = con.sql(f"select filename, benchmark, kind, count(*) from {scan} group by all").fetchall()
        if _repeated_within(con, scan) or _stored_already(con, scan, files, {b for _, b, _, _ in counts}, known):
            return None
    finally:
        _drop_dedup_tables(con)
    by_folder: dict[Path, list[tuple[str, str, int]]] = {folder: [] for folder in staged}
    for name, benchmark, kind, n in counts:
        by_folder[Path(name).parent].append((benchmark, kind, n))
    return [NewEvents(sum(n for *_, n in rows), _summed(rows), _parts([folder]))
            for folder, rows in by_folder.items()]


def _parts(staged: list[Path]) -> list[Path]:
    """The part files of staging folders, in reading order (stage.part_name)."""
    return [part for folder in staged for part in sorted(folder.glob("part-*.parquet"))]


def _summed(rows: list[tuple[str, str, int]]) -> list[tuple[str, str, int]]:
    """(benchmark, kind, rows) of several parts, one row a partition."""
    total: dict[tuple[str, str], int] = {}
    for benchmark, kind, n in rows:
        total[benchmark, kind] = total.get((benchmark, kind), 0) + n
    return [(b, k, n) for (b, k), n in total.items()]


def _repeated_within(con: duckdb.DuckDBPyConnection, scan: str) -> int:
    """Ids seen more than once in `scan`, on 64-bit hashes of the ids (8 bytes a row, against 32 for
    the ids, and the group-by spills): equal ids hash alike, so no repeated hash means no repeated
    id. A repeated hash (a repeat, or a rare collision) sends the caller to its exact path, whose
    result is the same either way."""
    return con.execute(f"select count(*) from (select hash(event_id) from {scan} group by 1 having count(*) > 1)"
                       ).fetchall()[0][0]


def _stored_already(con: duckdb.DuckDBPyConnection, scan: str, files: list[str], benchmarks: set[str],
                    known: StoredIds) -> bool:
    """Whether an id in `scan` is in the store's `files` already; those ids go into temp table `repeated`."""
    stored = [f for f in files if any(f"/benchmark={b}/" in f for b in benchmarks)]
    if not stored:
        return False
    # Probing the stored ids with the batch's (a hash table of the batch, the smaller side), not
    # the other way round: the stored ids grow with the store.
    con.register("stored", known.table(con, stored))
    con.execute(f"""create or replace temp table repeated as
        select distinct event_id from stored where event_id in (select event_id from {scan})""")
    con.unregister("stored")
    return con.sql("select count(*) from repeated").fetchall()[0][0] > 0


def _drop_dedup_tables(con: duckdb.DuckDBPyConnection) -> None:
    """Free what deciding took before the data files are written on the same connection."""
    for name in ("repeated", "keep"):
        con.execute(f"drop table if exists {name}")


def _counts(new: NewEvents, added: int) -> dict[str, str]:
    return {"staged": str(new.staged_rows), "added": str(added), "kinds": json.dumps(new.kinds)}


def ledger(info: dict[str, Any]) -> list[dict[str, str]]:
    """The batches a commit's metadata (commitInfo, or an entry of history()) records, their keys
    without META: one batch in META-prefixed keys of its own, or several committed together
    (Store.commit_together) as a JSON list under META + LEDGER; an empty list for other commits
    (the table's creation, optimize)."""
    if META + LEDGER in info:
        return json.loads(info[META + LEDGER])
    if META + "key" in info:
        return [{k[len(META):]: v for k, v in info.items() if k.startswith(META)}]
    return []


def batch_keys(info: dict[str, Any]) -> list[str]:
    return [batch["key"] for batch in ledger(info)]


def _batches(table: DeltaTable, maintenance: bool = False) -> list[Batch]:
    # history() is newest first and complete (the log is never cleaned up, see _ensure_table),
    # so an entry's version is its position. Its own "version" field is not trusted:
    # delta-rs numbers it from the version the handle loaded, and a commit landing
    # meanwhile shifts every number.
    entries = table.history()
    batches = [_batch(batch, h["timestamp"], len(entries) - 1 - i) for i, h in enumerate(entries) for batch in ledger(h)]
    if maintenance:
        batches += [_maintenance(h, len(entries) - 1 - i) for i, h in enumerate(entries) if META + "operation" in h]
    return sorted(batches, key=lambda b: b.version)


def _maintenance(entry: dict[str, Any], version: int) -> Batch:
    """A commit that adds no events (optimize) as a log entry: what it did, no source or counts."""
    metrics = entry.get("operationMetrics") or {}
    done = (f"{metrics['numFilesRemoved']} data files compacted into {metrics['numFilesAdded']}"
            if "numFilesRemoved" in metrics and "numFilesAdded" in metrics else "")
    return Batch(version=version, time=datetime.fromtimestamp(entry["timestamp"] / 1000, tz=timezone.utc), batch_id="",
                 source=done, digest="", key="", adapters="", events=0, duplicates=0,
                 operation=entry[META + "operation"])


def _batch(batch: dict[str, str], timestamp_ms: int, version: int) -> Batch:
    get = batch.get
    added = int(get("added", 0))
    return Batch(
        version=version,
        time=datetime.fromtimestamp(timestamp_ms / 1000, tz=timezone.utc),
        batch_id=get("batch_id", ""),
        source=get("source", ""),
        digest=get("digest", ""),
        key=get("key", ""),
        adapters=get("adapters", ""),
        events=added,
        duplicates=int(get("staged", 0)) - added,
        kinds=json.loads(get("kinds", "{}")),
    )


def _file_problem(path: Path, logged_size: int | None) -> str | None:
    try:
        size = os.path.getsize(path)
        if logged_size is not None and size != logged_size:
            return f"{size} bytes, but the Delta log recorded {logged_size}"
        parquet = pq.ParquetFile(path)
        for group in range(parquet.num_row_groups):
            parquet.read_row_group(group)
    except Exception as e:  # noqa: BLE001 - any failure to read it back is the finding
        return f"{type(e).__name__}: {e}"
    return None
