"""Ingest: sources -> adapters -> validated events -> staged Parquet -> one commit per source.

Memory stays bounded: events are converted a record at a time and staged in
Parquet row groups of ROWS_PER_GROUP; the commit reads the staged files back as a
stream. A bad record aborts the whole source before anything is committed.
"""

from __future__ import annotations

import ctypes
import gc
import hashlib
import json
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from deltalake.exceptions import DeltaError

from ..version import __version__
from ..schema import ARROW_SCHEMA, COLUMNS, SCHEMA_VERSION, event_id
from ..errors import BadInputError, QualityError, StoreError
from ..warehouse.batchdb import batch_connection
from ..warehouse.store import CommitResult, Held, Store
from .context import AdapterContext
from .adapters import ADAPTERS, Adapter, EventBatch, Group, unrecognised
from .prices import PriceRegistry
from .bulk import Irregular, check_envelope, convert_batch
from .rows import Where, convert
from .sources import Limits, Source, SourceFile, expand, memory_source

ROWS_PER_GROUP = 64_000
RUN_LEVEL_COLUMNS = ("model",)  # `--attr model=X` fills these where a source left them empty


@dataclass
class SourceReport:
    source: str
    digest: str
    adapters: list[str]
    read: int
    commit: CommitResult
    skipped_files: list[str] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)  # data-quality warnings (not refused)


@dataclass
class IngestReport:
    sources: list[SourceReport] = field(default_factory=list)

    @property
    def added(self) -> int:
        return sum(s.commit.added for s in self.sources)

    @property
    def duplicates(self) -> int:
        return sum(s.commit.duplicates for s in self.sources)

    @property
    def quarantined(self) -> int:
        return sum(s.commit.quarantined for s in self.sources)

    @property
    def already_ingested(self) -> int:
        return sum(s.commit.already_ingested for s in self.sources)


class Listener:
    """Hooks for progress display; the CLI passes a rich-backed one."""

    def start_source(self, source: Source) -> None: ...

    def advance(self, stored_bytes: int) -> None: ...

    def end_source(self, report: SourceReport) -> None: ...


def ingest(store: Store, paths: Iterable[Path], attrs: dict[str, str] | None = None, *,
           limits: Limits = Limits(), listener: Listener | None = None,
           prices: PriceRegistry | None = None, check: bool = True, quarantine: bool = False) -> IngestReport:
    """Ingest every source named by `paths`; each commits atomically or not at all."""
    listener = listener or Listener()
    prices = prices or PriceRegistry.load()
    report = IngestReport()
    for source in expand(list(paths), limits):
        listener.start_source(source)
        ctx = AdapterContext(limits, attrs or {}, listener.advance, prices, check, quarantine)
        result = ingest_source(store, source, ctx)
        report.sources.append(result)
        listener.end_source(result)
    return report


def ingest_memory(store: Store, label: str, name: str, data: bytes, *, prices: PriceRegistry | None = None,
                  check: bool = True) -> IngestReport:
    """Bytes a process holds (the OTLP receiver's requests, framed) as one batch named `name`:
    the same adapters, gate and atomic commit as a file on disk."""
    ctx = AdapterContext(attrs={}, prices=prices or PriceRegistry.load(), check=check)
    return IngestReport([ingest_source(store, memory_source(label, name, data), ctx)])


def ingest_source(store: Store, source: Source, ctx: AdapterContext) -> SourceReport:
    try:
        return _ingest_source(store, source, ctx)
    except (OSError, DeltaError, duckdb.IOException) as e:  # disk full, unwritable store: the store is as it was
        raise StoreError(f"{source.path}: could not write the batch to {store.root} ({e}); nothing was committed. "
                         "`tracewh doctor` removes any partial files.") from None


def _ingest_source(store: Store, source: Source, ctx: AdapterContext) -> SourceReport:
    attrs = ctx.attrs
    key = batch_key(source.digest, attrs)
    store.remove_dead_staging()  # on every path: what a killed ingest left goes now, not at the next new batch
    if store.has_batch(key):  # cheap early exit; commit() checks again under the lock
        return SourceReport(str(source.path), source.digest, [], 0, CommitResult(None, 0, 0, already_ingested=True))
    batch_id = "b" + key[:24]  # the batch key: same content with new --attr values is another batch
    with store.staging() as staged:
        writer = StagingWriter(staged, source.digest, batch_id, attrs)
        with cycle_collection_paused():
            adapters, claimed = _stage_source(writer, source, ctx)
            writer.add_run_attrs()
            writer.close()
        release_freed_memory()
        meta = {"digest": source.digest, "key": key, "batch_id": batch_id, "source": str(source.path),
                "adapters": ",".join(sorted(set(adapters))), "tracewh_version": __version__}
        flags: list[str] = []
        con = batch_connection(staged)  # one DuckDB instance for the gate and the commit's dedup
        try:
            commit = store.commit(staged, meta, _gate(staged, con, source, ctx, flags), con=con)
        finally:
            con.close()
    skipped = [f.name for f in source.others if f.name not in claimed]
    return SourceReport(str(source.path), source.digest, adapters, writer.rows, commit, skipped, flags)


_PAUSES = 0  # stagings under way that paused Python's cycle collector
_PAUSE_LOCK = threading.Lock()
_WAS_ENABLED = True


@contextmanager
def cycle_collection_paused() -> Iterator[None]:
    """Staging holds a chunk of event dicts (and their payloads) alive at a time; with the cycle
    collector on, its full passes over them cost 15% of staging's CPU. Events are trees, freed by
    reference counting, so the collector is paused while any ingest stages (threads included)."""
    global _PAUSES, _WAS_ENABLED
    with _PAUSE_LOCK:
        if _PAUSES == 0:
            _WAS_ENABLED = gc.isenabled()
            gc.disable()
        _PAUSES += 1
    try:
        yield
    finally:
        with _PAUSE_LOCK:
            _PAUSES -= 1
            if _PAUSES == 0 and _WAS_ENABLED:
                gc.enable()


def release_freed_memory() -> None:
    """Hand back to the OS what staging freed (millions of event dicts, Arrow buffers of every
    chunk), which the allocators otherwise keep: about 0.1 GB at scale 1, resident through the
    gate, the dedup and the data-file writes, whose DuckDB budget comes on top of it."""
    pa.default_memory_pool().release_unused()
    try:
        ctypes.CDLL(None).malloc_trim(0)  # glibc's; elsewhere there is nothing to call
    except (OSError, AttributeError):
        pass


def _gate(staged: Path, con: duckdb.DuckDBPyConnection, source: Source, ctx: AdapterContext,
          flags: list[str]) -> Held | None:
    """Run the data-quality suites on the staged batch: refuse it, or hold its failing events.

    Warnings (flagged, not refused) are appended to `flags`."""
    if not ctx.check:
        return None
    from .quality.compiled import check_staged

    report = check_staged(staged, con)
    flags += [f.describe() for f in report.failures if f.rule.severity == "warn"]
    if not report.failed:
        return None
    if not ctx.quarantine:
        raise QualityError(f"{source.path}: refused by the data-quality gate; nothing was committed "
                           f"(ingest --quarantine holds failing events and commits the rest)\n{report.to_text()}")
    return Held(report.reasons_by_event(), report.suites_version)


def batch_key(digest: str, attrs: dict[str, str]) -> str:
    """Same content with different --attr values is a new batch (its events dedupe by id)."""
    if not attrs:
        return digest
    return hashlib.sha256((digest + json.dumps(attrs, sort_keys=True)).encode()).hexdigest()


def _stage_source(writer: StagingWriter, source: Source, ctx: AdapterContext) -> tuple[list[str], set[str]]:
    """Stage every file: each adapter, in claiming order, takes the groups it recognises among the
    files still unclaimed. A data file none takes is refused before any event is read; another
    file none takes (a README) is skipped. Returns each group's format, and the names claimed."""
    claimed: set[str] = set()
    taken: list[tuple[Adapter, Group]] = []
    for adapter in ADAPTERS:
        for group in adapter.groups([f for f in source.files + source.others if f.name not in claimed], ctx):
            taken.append((adapter, group))
            claimed |= {f.name for f in group.files}
    unclaimed = sorted((f for f in source.files if f.name not in claimed), key=lambda f: f.name)
    if unclaimed:
        raise unrecognised(unclaimed[0], ctx)
    for adapter, group in taken:
        _stage_group(writer, adapter, group, ctx)
    return [group.format for _, group in taken], claimed


def _stage_group(writer: StagingWriter, adapter: Adapter, group: Group, ctx: AdapterContext) -> None:
    try:
        for item in adapter.events(group, ctx):
            if isinstance(item, EventBatch):
                writer.add_batch(item)
            else:
                file, line, event = item
                writer.add(event, file, line)
    except BadInputError:
        # An event read before the adapter met this error may be refused first, as when every
        # event was converted the moment it was read: the earlier error is the one reported.
        writer.flush()
        raise


class StagingWriter:
    """Fills envelope defaults, then converts and validates events a chunk at a time and writes
    them to a staging Parquet file: whole columns at once (bulk.py), or one event at a time
    (rows.convert) for a chunk the bulk conversion declines, which names any bad field."""

    def __init__(self, folder: Path, digest: str, batch_id: str, attrs: dict[str, str]):
        self.digest, self.batch_id, self.attrs = digest, batch_id, attrs
        self.defaults = {k: v for k, v in attrs.items() if k in RUN_LEVEL_COLUMNS}
        self.writer = pq.ParquetWriter(folder / "part-0.parquet", ARROW_SCHEMA, compression="zstd")
        self.pending: list[dict[str, Any]] = []
        self.where: list[Where] = []  # of each pending event, for errors
        self.runs: dict[str, str] = {}  # run_id -> benchmark, for run_attrs events
        self.rows = 0
        self._last: tuple[str, int] | None = None
        self._sub = 0

    def add(self, event: dict[str, Any], file: SourceFile, line: int) -> None:
        self._sub = self._sub + 1 if self._last == (file.name, line) else 0
        self._last = (file.name, line)
        if "event_id" not in event:  # not setdefault: the id is a hash, computed only when needed
            event["event_id"] = event_id(self.digest, file.name, line, self._sub)
        if "batch_id" not in event:
            event["batch_id"] = self.batch_id
        if "source" not in event:
            event["source"] = f"{file.name}:{line}"
        for column, value in self.defaults.items():
            if event.get(column) is None:
                event[column] = value
        self.pending.append(event)
        self.where.append(Where(file.display, line))
        if len(self.pending) >= ROWS_PER_GROUP:
            self.flush()

    def add_run_attrs(self) -> None:
        """One run_attrs event per run seen, carrying `--attr` values."""
        if not self.attrs:
            return
        self.flush()
        now = datetime.now(timezone.utc)  # attributes attached now; later ones win in `runs`
        for run_id, benchmark in self.runs.items():
            self.pending.append({
                "event_id": event_id(self.digest, "run_attrs", run_id, json.dumps(self.attrs, sort_keys=True)),
                "batch_id": self.batch_id, "run_id": run_id, "benchmark": benchmark, "kind": "run_attrs", "seq": 0,
                "ts": now, "payload": dict(self.attrs), "source": "--attr"})
            self.where.append(Where("--attr", None))
        self.flush()

    def add_batch(self, batch: EventBatch) -> None:
        """Events an adapter gives as columns (adapters/base.py): defaults filled and envelope
        checked a column at a time; a batch the checks decline goes through add() one by one."""
        self.flush()  # events added before come first
        lines = batch.columns.column("line")
        first = (batch.file.name, lines[0].as_py()) if len(lines) else None
        try:
            if first == self._last:  # a second event on a line: the per-event path numbers it
                raise Irregular("line continues")
            columns = self._filled(batch)
        except Irregular:
            for file, line, event in batch.per_record():
                self.add(event, file, line)
            return
        self._write(columns)
        self._last, self._sub = (batch.file.name, lines[-1].as_py()), 0

    def _filled(self, batch: EventBatch) -> pa.RecordBatch:
        """add()'s defaults and convert()'s envelope checks, for columns (one event per line)."""
        given, name, n = batch.columns, batch.file.name, batch.columns.num_rows
        arrays = {c.name: given.column(c.name) if c.name in given.schema.names else pa.nulls(n, c.type)
                  for c in COLUMNS}
        if wrong := [c.name for c in COLUMNS if arrays[c.name].type != c.type]:
            raise TypeError(f"{batch.file.display}: the adapter gave columns {wrong} in other types than the schema's")
        lines = given.column("line")
        ids = arrays["event_id"]
        if ids.null_count:
            ids = ids.to_pylist()
            arrays["event_id"] = pa.array([event_id(self.digest, name, line, 0) if i is None else i
                                           for i, line in zip(ids, lines.to_pylist())], pa.string())
        sources = pc.binary_join_element_wise(name, lines.cast(pa.string()), ":")
        arrays["source"] = pc.coalesce(arrays["source"], sources)
        arrays["batch_id"] = pc.coalesce(arrays["batch_id"], pa.scalar(self.batch_id))
        for column, value in self.defaults.items():
            arrays[column] = pc.coalesce(arrays[column], pa.scalar(value))
        arrays["schema_version"] = pc.coalesce(arrays["schema_version"], pa.scalar(SCHEMA_VERSION, pa.int32()))
        check_envelope(arrays)
        return pa.RecordBatch.from_arrays(list(arrays.values()), schema=ARROW_SCHEMA)

    def flush(self) -> None:
        """Convert and write the pending events (raises the first bad event's error)."""
        if not self.pending:
            return
        try:
            batch = convert_batch(self.pending)
        except Irregular:
            batch = pa.RecordBatch.from_pylist([convert(e, w) for e, w in zip(self.pending, self.where)],
                                               schema=ARROW_SCHEMA)
        self.pending, self.where = [], []
        self._write(batch)

    def _write(self, batch: pa.RecordBatch) -> None:
        if self.attrs:
            for run_id, benchmark in zip(batch.column("run_id").to_pylist(), batch.column("benchmark").to_pylist()):
                self.runs.setdefault(run_id, benchmark)
        self.writer.write_batch(batch)
        self.rows += batch.num_rows

    def close(self) -> None:
        self.flush()
        self.writer.close()
