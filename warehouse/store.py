"""The append-only event store: one Delta Lake table of hive-partitioned, zstd Parquet.

Layout of a warehouse directory:

    events/          the Delta table (benchmark=<b>/kind=<k>/part-*.parquet, _delta_log/)
    _staging/        batches being prepared; never part of the store
    .writer.lock     held by the one process committing at a time

Delta's transaction log gives atomic commits and time travel. The lock serialises
writers so that "was this digest already ingested?" and the commit that answers it
cannot interleave (Delta's optimistic appends alone would let two processes
ingesting the same archive both land it).
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import duckdb
import pyarrow.dataset as ds
from deltalake import CommitProperties, DeltaTable, WriterProperties, write_deltalake
from deltalake.exceptions import TableNotFoundError

from ..errors import StoreError
from ..schema import ARROW_SCHEMA, PARTITION_COLUMNS
from .sqltext import literal, literal_list

META = "tracewh."  # prefix of our keys in Delta commit metadata
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


@dataclass
class CommitResult:
    version: int | None  # None when nothing was committed
    added: int
    duplicates: int
    already_ingested: bool = False
    kinds: dict[str, int] = field(default_factory=dict)


class Store:
    def __init__(self, root: Path):
        self.root = Path(root)
        self.table_path = self.root / "events"

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
        table = self.table()
        return None if table is None else table.version()

    def files(self, version: int | None = None) -> list[str]:
        """Absolute paths of the Parquet files that make up the store at `version`."""
        table = self.table(version)
        return [] if table is None else table.file_uris()

    def batches(self) -> list[Batch]:
        table = self.table()
        if table is None:
            return []
        return sorted((_batch(h) for h in table.history() if META + "digest" in h), key=lambda b: b.version)

    def find_batch(self, key: str) -> Batch | None:
        return next((b for b in self.batches() if b.key == key), None)

    # -- writing --------------------------------------------------------------

    @contextmanager
    def lock(self) -> Iterator[None]:
        self.root.mkdir(parents=True, exist_ok=True)
        with open(self.root / ".writer.lock", "a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)  # released by the OS if this process dies
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    @contextmanager
    def staging(self) -> Iterator[Path]:
        """A private folder for one batch in preparation, removed afterwards."""
        base = self.root / "_staging"
        base.mkdir(parents=True, exist_ok=True)
        _remove_dead_staging(base)
        path = base / f"{os.getpid()}-{uuid.uuid4().hex[:8]}"
        path.mkdir()
        try:
            yield path
        finally:
            shutil.rmtree(path, ignore_errors=True)

    def commit(self, staged: Path, meta: dict[str, str]) -> CommitResult:
        """Append the staged events not already stored, as one Delta commit.

        `staged` is a folder of part-*.parquet files in the event schema; `meta` must hold
        `key`, and a key already committed adds nothing.
        """
        with self.lock():
            self._ensure_table()
            self.remove_orphans()
            if self.find_batch(meta["key"]):
                return CommitResult(None, 0, 0, already_ingested=True)
            staged_rows, kinds = self._write_new_events(duckdb.connect(), staged)
            added = sum(kinds.values())
            if not added:
                return CommitResult(None, 0, staged_rows)
            counts = {"staged": str(staged_rows), "added": str(added), "kinds": json.dumps(kinds)}
            write_deltalake(
                str(self.table_path),
                ds.dataset(staged / NEW_EVENTS, schema=ARROW_SCHEMA).scanner().to_reader(),
                mode="append",
                partition_by=list(PARTITION_COLUMNS),
                writer_properties=WriterProperties(compression="ZSTD"),
                commit_properties=CommitProperties(custom_metadata={META + k: v for k, v in (meta | counts).items()}),
            )
            return CommitResult(self.version(), added, staged_rows - added, kinds=kinds)

    def _ensure_table(self) -> None:
        if self.table() is None:
            DeltaTable.create(
                str(self.table_path),
                schema=ARROW_SCHEMA,
                partition_by=list(PARTITION_COLUMNS),
                configuration={"delta.appendOnly": "true"},
                name="tracewh_events",
            )

    def _write_new_events(self, con: duckdb.DuckDBPyConnection, staged: Path) -> tuple[int, dict[str, int]]:
        """Write staged events minus ids already stored and minus repeats within the
        batch to staged/NEW_EVENTS; return the staged row count and new rows per kind."""
        new_events = literal(staged / NEW_EVENTS)
        con.execute(f"create view staged as select * from read_parquet({literal(staged / 'part-*.parquet')})")
        staged_rows = con.execute("select count(*) from staged").fetchall()[0][0]
        benchmarks = [r[0] for r in con.sql("select distinct benchmark from staged").fetchall()]
        stored = [f for f in self.files() if any(f"/benchmark={b}/" in f for b in benchmarks)]
        query = "select * from staged"
        if stored:
            con.execute(f"create view stored as select event_id from read_parquet({literal_list(stored)})")
            query += " where event_id not in (select event_id from stored)"
        query += " qualify row_number() over (partition by event_id order by seq) = 1"
        con.execute(f"copy ({query}) to {new_events} (format parquet, compression zstd)")
        kinds = con.sql(f"select kind, count(*) from read_parquet({new_events}) group by kind order by kind")
        return staged_rows, dict(kinds.fetchall())

    def remove_orphans(self) -> list[Path]:
        """Delete data files no commit references (left by a writer that died mid-batch).

        Safe only under the writer lock: every live writer holds it while writing.
        """
        table = self.table()
        if table is None:
            return []
        committed = {os.path.normpath(f) for f in table.file_uris()}
        orphans = [p for p in self.table_path.rglob("*.parquet") if os.path.normpath(p) not in committed]
        for p in orphans:
            p.unlink()
        return orphans


def _batch(history: dict) -> Batch:
    get = lambda key, default="": history.get(META + key, default)  # noqa: E731
    added = int(get("added", 0))
    return Batch(
        version=history["version"],
        time=datetime.fromtimestamp(history["timestamp"] / 1000, tz=timezone.utc),
        batch_id=get("batch_id"),
        source=get("source"),
        digest=get("digest"),
        key=get("key"),
        adapters=get("adapters"),
        events=added,
        duplicates=int(get("staged", 0)) - added,
        kinds=json.loads(get("kinds", "{}")),
    )


def _remove_dead_staging(base: Path) -> None:
    """Staging folders are named <pid>-<random>; drop those whose process is gone."""
    for path in base.iterdir():
        pid = path.name.split("-", 1)[0]
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(path, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
