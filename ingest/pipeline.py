"""Ingest: sources -> adapters -> validated events -> staged Parquet -> a batch per source, committed.

Top-down, per source: find the groups each adapter reads (discover), stage their events
(stage.py: in this process, or in worker processes for a large ingest, workers.py), run the
data-quality gate over the staged batch, and commit it. Small sources wait to commit together
(_Commits): one gate query, one write and one Delta commit for many batches. Memory stays
bounded: events are converted a chunk at a time and staged in Parquet; the commit reads the
staged files back as a stream. A bad record aborts its source before anything of it is
committed; the sources before it are committed, the ones after it are not.
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
from typing import TYPE_CHECKING, NamedTuple

import duckdb
from deltalake.exceptions import DeltaError

from ..errors import BadInputError, QualityError, StoreError, TracewhError
from ..version import __version__
from ..warehouse.batchdb import batch_connection
from ..warehouse.store import CommitResult, Held, Store
from .adapters import ADAPTERS, Adapter, Group, unrecognised
from .context import AdapterContext
from .prices import PriceRegistry
from .sources import Limits, Source, expand, memory_source
from .memory import cycle_collection_paused, release_freed_memory
from .stage import StagingWriter, stage_group
from .workers import Job, StagedPart, StagingPool, slices

if TYPE_CHECKING:
    from .quality.report import Report

# Batches wait to commit together (_Commits) until they hold this many events, or are this many:
# a big batch commits alone, and a sweep of hundreds of small archives a few dozen at a time.
GROUP_ROWS = 250_000
GROUP_SOURCES = 64


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
    skipped: list[tuple[str, str]] = field(default_factory=list)  # files of folders no source read: (name, why)

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
    large; 1: everything in this process. Either way the same events are committed, in the
    order given (small sources several to a commit, _Commits), and the first bad record in
    reading order is the error reported."""
    listener = listener or Listener()
    prices = prices or PriceRegistry.load()
    report = IngestReport()
    paths = list(paths)
    several = len(paths) > 1 or any(p.is_dir() for p in paths)
    # The pool shuts (its running jobs finish) before the staging folders they write are removed.
    with ExitStack() as folders, StagingPool(workers, several_sources=several) as pool:
        commits = _Commits(report, listener)
        queue: deque[tuple[Source, Callable[[Listener], Staged | SourceReport]]] = deque()  # staging, in order
        try:
            for source in expand(paths, limits, report.skipped):
                ctx = AdapterContext(limits, attrs or {}, listener.advance, prices, check, quarantine)
                queue.append((source, _start(store, source, ctx, pool, folders)))
                _finish(queue, commits, listener, keep=pool.lookahead)
        except TracewhError:
            _finish(queue, commits, listener)  # the sources before a refused one commit, as when read one by one
            commits.flush()
            raise
        _finish(queue, commits, listener)
        commits.flush()
    if paths and not report.sources:
        raise nothing_readable(paths, report.skipped)
    return report


def nothing_readable(paths: list[Path], skipped: list[tuple[str, str]]) -> BadInputError:
    """The refusal of an ingest that found nothing to read: what was skipped, and why."""
    where = str(paths[0]) if len(paths) == 1 else f"{len(paths)} paths"
    return BadInputError(where, f"nothing to ingest, {skipped_summary(skipped)}")


def skipped_summary(skipped: list[tuple[str, str]], shown: int = 3) -> str:
    """'2 skipped: runs/a.csv, runs/b.txt: not a file tracewh reads (...)': a count, then the
    first few names under each reason, on one line."""
    by_reason: dict[str, list[str]] = {}
    for name, why in skipped:
        by_reason.setdefault(why, []).append(name)
    parts = [f"{', '.join(names[:shown])}{f' and {len(names) - shown} more' if len(names) > shown else ''}: {why}"
             for why, names in by_reason.items()]
    return f"{len(skipped)} skipped: {'; '.join(parts)}"


def _finish(queue: deque[tuple[Source, Callable[[Listener], Staged | SourceReport]]], commits: _Commits,
            listener: Listener, keep: int = 0) -> None:
    """Take the queued sources' staged batches, in order, until `keep` are left (the workers stage
    those), to commit. A source refused in staging: the ones before it commit, the rest do not
    (their staging stops with the ingest's pool, their folders go with the ingest)."""
    while len(queue) > keep:
        source, staged = queue.popleft()
        listener.start_source(source)
        try:
            commits.add(staged(listener))
        except TracewhError:
            queue.clear()
            commits.flush()
            raise


def ingest_memory(store: Store, label: str, name: str, data: bytes, *, prices: PriceRegistry | None = None,
                  check: bool = True, quarantine: bool = False) -> IngestReport:
    """Bytes a process holds (the OTLP receiver's requests, framed) as one batch named `name`:
    the same adapters, gate and atomic commit as a file on disk (`quarantine` as for ingest)."""
    ctx = AdapterContext(attrs={}, prices=prices or PriceRegistry.load(), check=check, quarantine=quarantine)
    return IngestReport([ingest_source(store, memory_source(label, name, data), ctx)])


def ingest_source(store: Store, source: Source, ctx: AdapterContext) -> SourceReport:
    """One source, staged in this process, checked and committed."""
    with ExitStack() as folders:
        staged = _start(store, source, ctx, StagingPool(1), folders)(Listener())
        return staged.commit() if isinstance(staged, Staged) else staged


class Discovery(NamedTuple):
    groups: list[tuple[Adapter, Group]]  # in reading order
    claimed: set[str]  # names of the files they read


def _start(store: Store, source: Source, ctx: AdapterContext, pool: StagingPool,
           folders: ExitStack) -> Callable[[Listener], Staged | SourceReport]:
    """What gives the source's staged batch when its turn comes. Its groups go to the workers
    now, when pool.takes them; otherwise it is staged here then. `folders` removes the staging
    folder if the ingest ends before the batch commits."""
    with _store_errors(store, source):
        store.remove_dead_staging()  # on every path: what a killed ingest left goes now, not at the next new batch
        found = discover(source, ctx)  # before the key: a single file is being hashed meanwhile (sources.py)
        key = batch_key(source.digest, ctx.attrs)
        if store.has_batch(key):  # cheap early exit; commit() checks again under the lock
            return lambda _: _already(source)
        if not pool.takes(source, [group for _, group in found.groups]):
            return lambda _: _stage_here(store, source, ctx, key, found, folders)
        staged = Staged.made(store, source, ctx, key, found, folders)
        cuts = slices([group for _, group in found.groups], pool.jobs_per_source)
        jobs = [Job(staged.folder, part, source.digest, batch_id(key), ctx.attrs,
                    [(adapter.name, group) for adapter, group in found.groups[cut]],
                    ctx.limits, ctx.prices, ctx.check, ctx.quarantine) for part, cut in enumerate(cuts)]
        handed = _Handed(staged, pool, jobs, [pool.submit(job) for job in jobs])
    return handed.collect


@dataclass
class Staged:
    """A source's batch staged (part files in `folder`), waiting for its gate and commit."""

    store: Store
    source: Source
    ctx: AdapterContext
    key: str
    found: Discovery
    folder: Path
    removal: ExitStack  # closing it removes the folder
    rows: int = 0

    @classmethod
    def made(cls, store: Store, source: Source, ctx: AdapterContext, key: str, found: Discovery,
             folders: ExitStack) -> Staged:
        """With a new staging folder, which `folders` removes if the ingest ends first."""
        removal = ExitStack()
        folder = removal.enter_context(store.staging())
        folders.enter_context(removal)
        return cls(store, source, ctx, key, found, folder, removal)

    @property
    def meta(self) -> dict[str, str]:
        """What the ledger records of the batch (Store.commit)."""
        return {"digest": self.source.digest, "key": self.key, "batch_id": batch_id(self.key),
                "source": str(self.source.path), "adapters": ",".join(sorted(set(self.adapters))),
                "tracewh_version": __version__}

    @property
    def adapters(self) -> list[str]:
        return [group.format for _, group in self.found.groups]

    def commit(self) -> SourceReport:
        """Gate and commit the batch alone (the gate's warnings go in the report's flags)."""
        flags: list[str] = []
        with _store_errors(self.store, self.source), self.removal:
            con = batch_connection(self.folder)  # one DuckDB instance for the gate and the commit's dedup
            try:
                commit = self.store.commit(self.folder, self.meta, _gate(self.folder, con, self.source, self.ctx, flags),
                                           con=con)
            finally:
                con.close()
        return self.reported(commit, flags)

    def reported(self, commit: CommitResult, flags: list[str]) -> SourceReport:
        skipped = [f.name for f in self.source.others if f.name not in self.found.claimed]
        return SourceReport(str(self.source.path), self.source.digest, self.adapters, self.rows, commit, skipped, flags)


def _stage_here(store: Store, source: Source, ctx: AdapterContext, key: str, found: Discovery,
                folders: ExitStack) -> Staged:
    with _store_errors(store, source):
        staged = Staged.made(store, source, ctx, key, found, folders)
        writer = StagingWriter(staged.folder, source.digest, batch_id(key), ctx.attrs)
        with cycle_collection_paused():
            for adapter, group in found.groups:
                stage_group(writer, adapter, group, ctx)
            writer.add_run_attrs()
            writer.close()
        release_freed_memory()
    staged.rows = writer.rows
    return staged


@dataclass
class _Handed:
    """A source whose groups the workers stage, as jobs of neighbouring groups, a part file each."""

    staged: Staged
    pool: StagingPool
    jobs: list[Job]
    futures: list[Future[StagedPart]]

    def collect(self, listener: Listener) -> Staged:
        """Wait for the parts: the staged batch."""
        staged = self.staged
        with _store_errors(staged.store, staged.source):
            parts = self._parts(listener)
            self.pool.stop_if_idle()
            staged.rows = sum(p.rows for p in parts)
            if staged.ctx.attrs:  # the run_attrs events of every run the parts saw, in a last part
                writer = StagingWriter(staged.folder, staged.source.digest, batch_id(staged.key), staged.ctx.attrs,
                                       part=len(parts))
                for part in parts:
                    writer.runs = {**part.runs, **writer.runs}  # the first part to see a run names its benchmark
                writer.add_run_attrs()
                writer.close()
                staged.rows += writer.rows
        return staged

    def _parts(self, listener: Listener) -> list[StagedPart]:
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


class _Commits:
    """Staged batches (and sources found already ingested), in reading order, waiting to commit.

    Small batches wait for more, up to GROUP_ROWS events or GROUP_SOURCES batches, and commit
    together: one gate query, one dedup, one data-file write and one Delta commit for all, each
    still a batch of its own in the ledger (Store.commit_together). A sweep of 18 small archives
    paid 0.13 s a batch for those, one by one. Together is taken only when it changes nothing:
    every batch passes every rule and all its events are new. Otherwise, and for a batch alone,
    each commits by itself (Staged.commit), in order, as it always did."""

    def __init__(self, report: IngestReport, listener: Listener):
        self.report, self.listener = report, listener
        self.waiting: list[Staged | SourceReport] = []

    @property
    def staged(self) -> list[Staged]:
        return [w for w in self.waiting if isinstance(w, Staged)]

    def add(self, item: Staged | SourceReport) -> None:
        if isinstance(item, Staged) and item.key in {w.key for w in self.staged}:
            item.removal.close()  # the same content again: already ingested, as it is once the first commits
            item = _already(item.source)
        self.waiting.append(item)
        staged = self.staged
        if sum(w.rows for w in staged) >= GROUP_ROWS or len(staged) >= GROUP_SOURCES:
            self.flush()

    def flush(self) -> None:
        """Commit what waits. A batch refused: the ones before it are committed, the rest are not."""
        staged, waiting, self.waiting = self.staged, self.waiting, []
        together = iter(_commit_together(staged) or []) if len(staged) > 1 else iter([])
        for item in waiting:
            if isinstance(item, Staged):
                item = next(together, None) or item.commit()
            self.report.sources.append(item)
            self.listener.end_source(item)


def _commit_together(batches: list[Staged]) -> list[SourceReport] | None:
    """The batches gated and committed as one, when that changes nothing (_Commits); else None,
    having committed nothing."""
    first = batches[0]
    with _store_errors(first.store, first.source):
        con = batch_connection(first.folder)
        try:
            # Every rule counts rows, and a row that fails in its batch fails in the union too (an
            # id repeated, a seq out of order): no failure on the union, none in any batch. Any
            # failure (a refusal, a warning to report, or one of the union alone, as a run in two
            # archives) sends each batch to its own gate.
            if first.ctx.check and _compiled_gate(con, [b.folder for b in batches]).failures:
                return None
            results = first.store.commit_together([(b.folder, b.meta) for b in batches], con)
        finally:
            con.close()
    if results is None:
        return None
    for b in batches:
        b.removal.close()
    return [b.reported(result, []) for b, result in zip(batches, results)]


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


def _gate(staged: Path, con: duckdb.DuckDBPyConnection, source: Source, ctx: AdapterContext,
          flags: list[str]) -> Held | None:
    """Run the data-quality suites on the staged batch: refuse it, or hold its failing events.

    Warnings (flagged, not refused) are appended to `flags`."""
    if not ctx.check:
        return None
    report = _compiled_gate(con, [staged])
    flags += [f.describe() for f in report.failures if f.rule.severity == "warn"]
    if not report.failed:
        return None
    if not ctx.quarantine:
        raise QualityError(f"{source.path}: refused by the data-quality gate; nothing was committed "
                           f"(ingest --quarantine holds failing events and commits the rest)\n{report.to_text()}")
    return Held(report.reasons_by_event(), report.suites_version)


def _compiled_gate(con: duckdb.DuckDBPyConnection, folders: list[Path]) -> Report:
    from .quality.compiled import check_staged  # here: a --no-check ingest does without its imports

    return check_staged(folders, con)


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


