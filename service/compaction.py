"""Background compaction for the service's committers (OTLP, labels): their many small commits
must not pile up small files. Every `interval_s`, Warehouse.optimize merges small files in tiers,
each only once some partition holds more than its count of files under its size:

- more than `files` files under 1 MB (each commit adds one per partition it touches): merged into
  files of up to 1 MB;
- more than 8 x `files` files under 16 MB: merged into files of up to 16 MB.

Nothing is vacuumed (every old version stays readable, docs/reliability.md), so what a compaction
rewrites stays on disk: merging every small file into one growing file, as a single tier did,
would write a live partition about 18 times over in 300 s if run every 5 s, and about 40 times in
an hour at 1,000 spans/s (estimates, docs/performance.md). In tiers a byte is rewritten a few
times at most, so the first tier can run often, which keeps a catalog derivation and every query
reading few files (live query p99 1.68 -> 1.05 s over 300 s)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..warehouse.datafiles import TARGET_FILE_BYTES

if TYPE_CHECKING:
    from ..api import Warehouse
    from .commit_process import CommitProcess

log = logging.getLogger("tracewh.compaction")
SMALL_FILE_BYTES = 1 << 20  # the first tier's file size: about 40 s of a partition's spans at 1,000 spans/s
LARGE_TIER = 8  # the second tier runs at this many times the first tier's count of files


class Compactor:
    """Shared by every committer of one service: one check at a time, at most one per interval."""

    def __init__(self, files: int, interval_s: float):
        self.tiers = ((files, SMALL_FILE_BYTES), (files * LARGE_TIER, TARGET_FILE_BYTES))
        self.interval_s = interval_s
        self._lock = threading.Lock()
        self._checked = time.monotonic()

    def compact_if_due(self, warehouse: Warehouse | CommitProcess, later: Callable[[], bool] = lambda: False) -> None:
        """`warehouse`: the store, or the OTLP committer's process working on it (the same calls).
        `later`, asked after a compaction: True when the committer will derive the compacted
        version's catalog together with its next commit's (requests are waiting), so it is not
        built now."""
        if not self._lock.acquire(blocking=False):
            return  # another committer is at it
        try:
            if time.monotonic() - self._checked < self.interval_s:
                return
            self._checked = time.monotonic()
            due = [(files, size) for files, size in self.tiers if warehouse.needs_optimize(files, size)]
            if not due:  # most checks: nothing built, nothing written (a catalog here held one exporter's commits up)
                return
            # The catalog of the version compacted built first (a committer may have deferred it):
            # a catalog keeps every row across a compaction only when derived from a version whose
            # files the compaction merged, so one derived from an older catalog still would be
            # built in full (7-9 s at scale 1 under live load, all that time holding new spans out
            # of the reads). The compaction's own catalog is then built at once, or derived with
            # the next commit's when requests wait (one derivation, not two, while they wait).
            warehouse.prepare()
            made = False  # a version
            for files, size in due:
                result = warehouse.optimize(when_over=files, target_bytes=size)
                if result is not None:
                    made = True
                    if result["files_after"] != result["files_before"]:  # small files that fit no merge: nothing
                        log.info("compacted %d data files into %d (files under %d MB)", result["files_before"],
                                 result["files_after"], size >> 20)
            if made and not later():
                warehouse.prepare()
        except Exception:  # noqa: BLE001 - compaction is housekeeping: the next check tries again
            log.exception("compacting the store failed")
        finally:
            self._lock.release()
