"""Ingest: sources -> adapters -> validated events -> staged Parquet -> one commit per source.

Memory stays bounded: events are converted a record at a time and staged in
Parquet row groups of ROWS_PER_GROUP; the commit reads the staged files back as a
stream. A bad record aborts the whole source before anything is committed.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from datetime import datetime, timezone
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import pyarrow.parquet as pq
from deltalake.exceptions import DeltaError

from ..version import __version__
from ..schema import ARROW_SCHEMA, event_id
from ..errors import QualityError, StoreError
from ..warehouse.store import CommitResult, Held, Store
from .context import AdapterContext
from .adapters import ADAPTERS, Adapter, Group, unrecognised
from .prices import PriceRegistry
from .rows import ColumnBuffer, Where, convert
from .sources import Limits, Source, SourceFile, expand

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
    if store.find_batch(key) is not None:  # cheap early exit; commit() checks again under the lock
        return SourceReport(str(source.path), source.digest, [], 0, CommitResult(None, 0, 0, already_ingested=True))
    batch_id = "b" + key[:24]  # the batch key: same content with new --attr values is another batch
    with store.staging() as staged:
        writer = StagingWriter(staged, source.digest, batch_id, attrs)
        adapters, claimed = _stage_source(writer, source, ctx)
        writer.add_run_attrs()
        writer.close()
        meta = {"digest": source.digest, "key": key, "batch_id": batch_id, "source": str(source.path),
                "adapters": ",".join(sorted(set(adapters))), "tracewh_version": __version__}
        flags: list[str] = []
        commit = store.commit(staged, meta, _gate(staged, source, ctx, flags))
    skipped = [f.name for f in source.others if f.name not in claimed]
    return SourceReport(str(source.path), source.digest, adapters, writer.rows, commit, skipped, flags)


def _gate(staged: Path, source: Source, ctx: AdapterContext, flags: list[str]) -> Held | None:
    """Run the data-quality suites on the staged batch: refuse it, or hold its failing events.

    Warnings (flagged, not refused) are appended to `flags`."""
    if not ctx.check:
        return None
    from .quality.gate import check_staged

    report = check_staged(staged)
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
    for file, line, event in adapter.events(group, ctx):
        writer.add(event, file, line)


class StagingWriter:
    """Fills envelope defaults, validates, and writes events to a staging Parquet file."""

    def __init__(self, folder: Path, digest: str, batch_id: str, attrs: dict[str, str]):
        self.digest, self.batch_id, self.attrs = digest, batch_id, attrs
        self.defaults = {k: v for k, v in attrs.items() if k in RUN_LEVEL_COLUMNS}
        self.writer = pq.ParquetWriter(folder / "part-0.parquet", ARROW_SCHEMA, compression="zstd")
        self.buffer = ColumnBuffer(ARROW_SCHEMA)
        self.runs: dict[str, str] = {}  # run_id -> benchmark, for run_attrs events
        self.rows = 0
        self._last: tuple[str, int] | None = None
        self._sub = 0

    def add(self, event: dict[str, Any], file: SourceFile, line: int) -> None:
        self._sub = self._sub + 1 if self._last == (file.name, line) else 0
        self._last = (file.name, line)
        event.setdefault("event_id", event_id(self.digest, file.name, line, self._sub))
        event.setdefault("batch_id", self.batch_id)
        event.setdefault("source", f"{file.name}:{line}")
        for column, value in self.defaults.items():
            if event.get(column) is None:
                event[column] = value
        row = convert(event, Where(file.display, line))
        self.runs.setdefault(row["run_id"], row["benchmark"])
        self._append(row)

    def add_run_attrs(self) -> None:
        """One run_attrs event per run seen, carrying `--attr` values."""
        if not self.attrs:
            return
        now = datetime.now(timezone.utc)  # attributes attached now; later ones win in `runs`
        for run_id, benchmark in self.runs.items():
            event = {"event_id": event_id(self.digest, "run_attrs", run_id, json.dumps(self.attrs, sort_keys=True)),
                     "batch_id": self.batch_id, "run_id": run_id, "benchmark": benchmark, "kind": "run_attrs",
                     "seq": 0, "ts": now,
                     "payload": dict(self.attrs), "source": "--attr"}
            self._append(convert(event, Where("--attr", None)))

    def _append(self, row: dict[str, Any]) -> None:
        self.buffer.append(row)
        self.rows += 1
        if self.buffer.rows >= ROWS_PER_GROUP:
            self.writer.write_batch(self.buffer.take())

    def close(self) -> None:
        if self.buffer.rows:
            self.writer.write_batch(self.buffer.take())
        self.writer.close()
