"""Ingest: sources -> adapters -> validated events -> staged Parquet -> one commit per source.

Top-down, per source: find the groups each adapter reads (discover), stage their events
(stage.py: in this process, or in worker processes for a large ingest, workers.py), run the
data-quality gate over the staged batch, and commit it. Memory stays bounded: events are
converted a chunk at a time and staged in Parquet; the commit reads the staged files back as
a stream. A bad record aborts its source before anything of it is committed; the sources
before it are committed, the ones after it are not read.
"""

from __future__ import annotations

import hashlib
import json
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, wait
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import duckdb
from deltalake.exceptions import DeltaError

from ..errors import QualityError, StoreError, TracewhError
from ..version import __version__
from ..warehouse.batchdb import batch_connection
from ..warehouse.store import CommitResult, Held, Store
from .adapters import ADAPTERS, Adapter, Group, unrecognised
from .context import AdapterContext
from .prices import PriceRegistry
from .sources import Limits, Source, expand, memory_source
from .stage import StagingWriter, cycle_collection_paused, release_freed_memory, stage_group
from .workers import Job, StagedPart, StagingPool, slices


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
           limits: Limits = Limits(), listener: Listener | None = None, prices: PriceRegistry | None = None,
           check: bool = True, quarantine: bool = False, workers: int | None = None) -> IngestReport:
    """Ingest every source named by `paths`, in order; each commits atomically or not at all.

    `workers`: processes that stage sources (workers.py). None: one per core once the ingest is
    large; 1: everything in this process. Either way the same events are committed, source by
    source, and the first bad record in reading order is the error reported."""
    listener = listener or Listener()
    prices = prices or PriceRegistry.load()
    report = IngestReport()
    paths = list(paths)
    several = len(paths) > 1 or any(p.is_dir() for p in paths)
    # The pool shuts (its running jobs finish) before the staging folders they write are removed.
    with ExitStack() as folders, StagingPool(workers, several_sources=several) as pool:
        queue: deque[tuple[Source, Callable[[Listener], SourceReport]]] = deque()  # what commits each source, in order
        try:
            for source in expand(paths, limits):
                ctx = AdapterContext(limits, attrs or {}, listener.advance, prices, check, quarantine)
                queue.append((source, _start(store, source, ctx, pool, folders)))
                _finish(queue, report, listener, keep=pool.lookahead)
        except TracewhError:
            _finish(queue, report, listener)  # the sources before a refused one commit, as when read one by one
            raise
        _finish(queue, report, listener)
    return report


def _finish(queue: deque[tuple[Source, Callable[[Listener], SourceReport]]], report: IngestReport,
            listener: Listener, keep: int = 0) -> None:
    """Commit the queued sources, in order, until `keep` are left (the workers stage those)."""
    while len(queue) > keep:
        source, commit = queue.popleft()
        listener.start_source(source)
        result = commit(listener)
        report.sources.append(result)
        listener.end_source(result)


def ingest_memory(store: Store, label: str, name: str, data: bytes, *, prices: PriceRegistry | None = None,
                  check: bool = True) -> IngestReport:
    """Bytes a process holds (the OTLP receiver's requests, framed) as one batch named `name`:
    the same adapters, gate and atomic commit as a file on disk."""
    ctx = AdapterContext(attrs={}, prices=prices or PriceRegistry.load(), check=check)
    return IngestReport([ingest_source(store, memory_source(label, name, data), ctx)])


def ingest_source(store: Store, source: Source, ctx: AdapterContext) -> SourceReport:
    """One source, staged in this process, checked and committed."""
    return _start(store, source, ctx, StagingPool(1), ExitStack())(Listener())


class Discovery(NamedTuple):
    groups: list[tuple[Adapter, Group]]  # in reading order
    claimed: set[str]  # names of the files they read


def _start(store: Store, source: Source, ctx: AdapterContext, pool: StagingPool,
           folders: ExitStack) -> Callable[[Listener], SourceReport]:
    """What commits the source when its turn comes. Its groups go to the workers now, when
    pool.takes them; otherwise it is staged here then."""
    with _store_errors(store, source):
        store.remove_dead_staging()  # on every path: what a killed ingest left goes now, not at the next new batch
        found = discover(source, ctx)  # before the key: a single file is being hashed meanwhile (sources.py)
        key = batch_key(source.digest, ctx.attrs)
        if store.has_batch(key):  # cheap early exit; commit() checks again under the lock
            return lambda _: _already(source)
        if not pool.takes(source, [group for _, group in found.groups]):
            return lambda _: _stage_here(store, source, ctx, key, found)
        folder = ExitStack()
        staged = folder.enter_context(store.staging())
        folders.enter_context(folder)  # removed with the ingest if it never commits
        cuts = slices([group for _, group in found.groups], pool.jobs_per_source)
        jobs = [Job(staged, part, source.digest, batch_id(key), ctx.attrs,
                    [(adapter.name, group) for adapter, group in found.groups[cut]],
                    ctx.limits, ctx.prices, ctx.check, ctx.quarantine) for part, cut in enumerate(cuts)]
        handed = _Handed(store, source, ctx, key, found, staged, folder, pool, jobs, [pool.submit(job) for job in jobs])
    return handed.commit


def _stage_here(store: Store, source: Source, ctx: AdapterContext, key: str, found: Discovery) -> SourceReport:
    with _store_errors(store, source), store.staging() as staged:
        writer = StagingWriter(staged, source.digest, batch_id(key), ctx.attrs)
        with cycle_collection_paused():
            for adapter, group in found.groups:
                stage_group(writer, adapter, group, ctx)
            writer.add_run_attrs()
            writer.close()
        release_freed_memory()
        return _check_and_commit(store, source, ctx, staged, key, found, writer.rows)


@dataclass
class _Handed:
    """A source whose groups the workers stage, as jobs of neighbouring groups, a part file each."""

    store: Store
    source: Source
    ctx: AdapterContext
    key: str
    found: Discovery
    staged: Path
    folder: ExitStack  # holds the staging folder: closing it removes the folder
    pool: StagingPool
    jobs: list[Job]
    futures: list[Future[StagedPart]]

    def commit(self, listener: Listener) -> SourceReport:
        """Wait for the parts, then check and commit them as one batch."""
        with _store_errors(self.store, self.source), self.folder:
            parts = self._collect(listener)
            self.pool.stop_if_idle()
            rows = sum(p.rows for p in parts)
            if self.ctx.attrs:  # the run_attrs events of every run the parts saw, in a last part
                writer = StagingWriter(self.staged, self.source.digest, batch_id(self.key), self.ctx.attrs, part=len(parts))
                for part in parts:
                    writer.runs = {**part.runs, **writer.runs}  # the first part to see a run names its benchmark
                writer.add_run_attrs()
                writer.close()
                rows += writer.rows
            return _check_and_commit(self.store, self.source, self.ctx, self.staged, self.key, self.found, rows)

    def _collect(self, listener: Listener) -> list[StagedPart]:
        """Each job's part, in order. The first job refused is the error (each job stops at its
        first bad record), raised once no worker still writes into the folder."""
        parts = []
        try:
            for future, job in zip(self.futures, self.jobs):
                parts.append(future.result())
                listener.advance(sum(f.stored_bytes for _, group in job.groups for f in group.files))
        except BaseException:
            for future in self.futures:
                future.cancel()
            wait(self.futures)
            raise
        return parts


@contextmanager
def _store_errors(store: Store, source: Source) -> Iterator[None]:
    try:
        yield
    except (OSError, DeltaError, duckdb.IOException) as e:  # disk full, unwritable store: the store is as it was
        raise StoreError(f"{source.path}: could not write the batch to {store.root} ({e}); nothing was committed. "
                         "`tracewh doctor` removes any partial files.") from None


def batch_id(key: str) -> str:
    return "b" + key[:24]  # the batch key's: same content with new --attr values is another batch


def _already(source: Source) -> SourceReport:
    return SourceReport(str(source.path), source.digest, [], 0, CommitResult(None, 0, 0, already_ingested=True))


def _check_and_commit(store: Store, source: Source, ctx: AdapterContext, staged: Path, key: str, found: Discovery,
                      rows: int) -> SourceReport:
    adapters = [group.format for _, group in found.groups]
    meta = {"digest": source.digest, "key": key, "batch_id": batch_id(key), "source": str(source.path),
            "adapters": ",".join(sorted(set(adapters))), "tracewh_version": __version__}
    flags: list[str] = []
    con = batch_connection(staged)  # one DuckDB instance for the gate and the commit's dedup
    try:
        commit = store.commit(staged, meta, _gate(staged, con, source, ctx, flags), con=con)
    finally:
        con.close()
    skipped = [f.name for f in source.others if f.name not in found.claimed]
    return SourceReport(str(source.path), source.digest, adapters, rows, commit, skipped, flags)


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


def discover(source: Source, ctx: AdapterContext) -> Discovery:
    """Each adapter, in claiming order, takes the groups it recognises among the files still
    unclaimed. A data file none takes is refused before any event is read; another file none
    takes (a README) is skipped. Returns the groups in reading order, and the names claimed."""
    claimed: set[str] = set()
    taken: list[tuple[Adapter, Group]] = []
    for adapter in ADAPTERS:
        for group in adapter.groups([f for f in source.files + source.others if f.name not in claimed], ctx):
            taken.append((adapter, group))
            claimed |= {f.name for f in group.files}
    unclaimed = sorted((f for f in source.files if f.name not in claimed), key=lambda f: f.name)
    if unclaimed:
        raise unrecognised(unclaimed[0], ctx)
    return Discovery(taken, claimed)


