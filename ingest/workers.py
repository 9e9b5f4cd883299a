"""Staging on every core: worker processes read a source's groups while the main process commits.

Python reads and converts events one at a time under one lock (the GIL), so one process
stages on one core. A large ingest therefore hands its groups (a run folder, a log, a file, a
range of a large native file: what one adapter reads as a unit) to a pool of worker processes,
one per core. Each job, a run of
neighbouring groups, is staged by a worker into a part file of its source's staging folder
(`part-<job>.parquet`), exactly as the main process would stage it; the main process then
checks and commits each source as one batch, in the order given, while the workers already
read the next sources.

The workers are forks of the main process, made when the first job is handed over (Linux only:
elsewhere everything stays in this process, whatever `workers` asks). Not fresh interpreters (multiprocessing's
spawn or forkserver): those import the user's `__main__` again, which runs a script or
notebook cell that calls ingest without an `if __name__ == "__main__"` guard a second time.
A worker touches nothing it inherits but the interpreter and the modules: it gets its group
by pickle (files opened again, sources.py), and threads the main process may run (DuckDB's,
the progress display's) never run in it. Small ingests never start the pool: below
POOL_MIN_BYTES forking and pickling cost more than the workers save.
"""

from __future__ import annotations

import ctypes
import gc
import os
import signal
import sys
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .adapters import ADAPTERS, Group
from .context import AdapterContext
from .prices import PriceRegistry
from .sources import Limits, Source
from .memory import cycle_collection_paused, reuse_freed_memory
from .stage import StagingWriter, arrow_without_pandas, stage_group

POOL_MIN_BYTES = 1 << 20  # bytes read in this ingest (decompressed where known) before workers pay off
# Events a worker converts at a time: a quarter of one process's chunk, as two workers and the
# main process share the ingest's memory (64k each held the scale-10 DecisionBench batch at 1.54 GB).
WORKER_CHUNK = 16_000


@dataclass
class Job:
    """Groups of one source to stage, in reading order, with all a worker needs: it shares
    nothing else with the main process."""

    folder: Path  # the source's staging folder
    part: int  # the job's place among the source's jobs: its part file's number
    digest: str
    batch_id: str
    attrs: dict[str, str]
    groups: list[tuple[str, Group]]  # (adapter name in ADAPTERS, group)
    limits: Limits
    prices: PriceRegistry
    check: bool
    quarantine: bool


@dataclass
class StagedPart:
    rows: int
    runs: dict[str, str] = field(default_factory=dict)  # run_id -> benchmark, for --attr's run_attrs


def stage_job(job: Job) -> StagedPart:
    """In a worker: the groups' events, converted and checked, into part file `job.part`. A bad
    record raises BadInputError, which reaches the main process whole (errors.py)."""
    adapters = {a.name: a for a in ADAPTERS}
    # One DuckDB thread: the other workers take the other cores (the native file staged 0.2-0.4 s sooner of 9)
    ctx = AdapterContext(job.limits, job.attrs, prices=job.prices, check=job.check, quarantine=job.quarantine, threads=1)
    writer = StagingWriter(job.folder, job.digest, job.batch_id, job.attrs, part=job.part, chunk=WORKER_CHUNK)
    with cycle_collection_paused():
        for name, group in job.groups:
            stage_group(writer, adapters[name], group, ctx)
        writer.close()
    # Memory freed stays for the next job (memory.py); the workers end, and hand it all back,
    # once no job is left (StagingPool.stop_if_idle), before the main process gates and commits.
    return StagedPart(writer.rows, writer.runs)


def group_bytes(group: Group) -> int:
    return sum(f.plain_bytes or f.stored_bytes for f in group.files)


def slices(groups: list[Group], count: int) -> list[slice]:
    """The groups cut into at most `count` runs of neighbours of about equal bytes: a part file
    each. Few parts, not one per group: the gate and the commit read every part (108 parts of a
    DecisionBench folder cost them 1.2 s more than one)."""
    sizes = [group_bytes(g) + 1 for g in groups]
    total, cuts, reached = sum(sizes), [0], 0
    for i, size in enumerate(sizes):
        reached += size
        if reached * count >= total * len(cuts) and i + 1 < len(groups):
            cuts.append(i + 1)
    return [slice(a, b) for a, b in zip(cuts, cuts[1:] + [len(groups)])]


class StagingPool:
    """Worker processes for an ingest, started the first time a source is worth handing over."""

    def __init__(self, processes: int | None = None, several_sources: bool = False):
        """`processes`: None = one per core once the ingest is large; 1 = never (all in this process).
        `several_sources`: the ingest may read more than one source (several paths, a folder)."""
        self.automatic, self.several_sources = processes is None, several_sources
        if sys.platform != "linux":  # workers are forks that die with their parent: prctl(2), Linux's
            processes = 1
        self.processes = processes if processes is not None else len(os.sched_getaffinity(0))
        self.read_bytes = 0  # of the sources seen so far
        self._executor: Any = None  # a ProcessPoolExecutor, while started
        self._pending: set[Future[StagedPart]] = set()  # jobs not done

    def takes(self, source: Source, groups: list[Group]) -> bool:
        """Whether this source's groups go to the workers: when there are workers to have and, by
        default, something to share between them (several groups, or sources to come), once the
        ingest has read POOL_MIN_BYTES."""
        self.read_bytes += sum(group_bytes(g) for g in groups)
        if self.processes < 2 or not groups or source.kind == "memory":
            return False
        if self.automatic:
            return self.read_bytes >= POOL_MIN_BYTES and (len(groups) > 1 or self.several_sources)
        return True

    @property
    def lookahead(self) -> int:
        """Sources staged ahead of the one committing: enough to keep every worker busy, once they run."""
        return self.processes if self._executor is not None else 0

    @property
    def jobs_per_source(self) -> int:
        """Jobs a source's groups are cut into: several per worker, so that a worker done early takes
        another while a slower one finishes (with 4 a worker, the 1.2 GB native file left one
        core idle for 0.9 s at the end; with 8, 0.4 s)."""
        return 8 * self.processes

    def submit(self, job: Job) -> Future[StagedPart]:
        if self._executor is None:
            import multiprocessing  # here: 20 ms of imports a small ingest, which never forks, does without
            from concurrent.futures import ProcessPoolExecutor

            self._executor = ProcessPoolExecutor(self.processes, mp_context=multiprocessing.get_context("fork"),
                                                 initializer=_start_worker)
            # The workers fork at the first submit. Objects they inherit are frozen out of the cycle
            # collector's reach first: its passes would touch, and so copy, every page of them.
            gc.freeze()
            try:
                future = self._executor.submit(stage_job, job)
            finally:
                gc.unfreeze()
        else:
            future = self._executor.submit(stage_job, job)
        self._pending = {f for f in self._pending if not f.done()} | {future}
        return future

    def stop_if_idle(self) -> None:
        """Stop the workers when no job is left (the next submit forks new ones): what they hold
        goes back to the OS before the main process's gate and commit fill its DuckDB budget.
        With idle workers alive, the 15M-event DecisionBench batch peaked at 1.64 GB."""
        if self._executor is not None and all(f.done() for f in self._pending):
            self._executor.shutdown(wait=True)
            self._executor = None

    def __enter__(self) -> StagingPool:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=True, cancel_futures=True)


PR_SET_PDEATHSIG = 1  # prctl(2)
WORKER_NICENESS = 10


def _start_worker() -> None:
    """A worker is killed with the main process (kill -9 included): none is left staging for an
    ingest that is gone (its staging folder goes at the next ingest or `tracewh doctor`). It
    yields the CPU to the main process, whose checks and commits every source waits for: staging
    runs ahead of them anyway. It keeps the memory it frees for its next allocations (memory.py),
    and converts without importing pandas (stage.arrow_without_pandas)."""
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    os.nice(WORKER_NICENESS)
    reuse_freed_memory()
    arrow_without_pandas()
