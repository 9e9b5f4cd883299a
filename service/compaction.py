"""Background compaction for the service's committers (OTLP, labels): their many small commits
must not pile up small files. Every `interval_s`, once a partition holds more than `files`
data files, Warehouse.optimize merges them (same answers, every old version still readable
within the retention docs/reliability.md states)."""

from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..api import Warehouse

log = logging.getLogger("tracewh.compaction")


class Compactor:
    """Shared by every committer of one service: one check at a time, at most one per interval."""

    def __init__(self, files: int, interval_s: float):
        self.files, self.interval_s = files, interval_s
        self._lock = threading.Lock()
        self._checked = time.monotonic()

    def compact_if_due(self, warehouse: Warehouse) -> None:
        if not self._lock.acquire(blocking=False):
            return  # another committer is at it
        try:
            if time.monotonic() - self._checked < self.interval_s:
                return
            self._checked = time.monotonic()
            # The catalogs of the version compacted and of the compaction's own version built at
            # once (a committer may defer one; a read leaves it to the committer): a catalog keeps
            # every row across a compaction only when derived from the version just before it, so
            # one derived after the next commit too would be built in full (7-9 s at scale 1 under
            # live load, all that time holding new spans out of the reads).
            warehouse.prepare()
            result = warehouse.optimize(when_over=self.files)
            if result is not None:
                warehouse.prepare()
                log.info("compacted %d data files into %d", result["files_before"], result["files_after"])
        except Exception:  # noqa: BLE001 - compaction is housekeeping: the next check tries again
            log.exception("compacting the store failed")
        finally:
            self._lock.release()
