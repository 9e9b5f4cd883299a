"""Reads of the store kept open between requests.

Opening a read (a DuckDB connection, the store's view catalog attached, its settings locked)
took 20-60 ms, more than a cheap query itself: under 50 clients, opening and closing
connections was most of what the server did (bench/service_load.py). A read is handed to one
request at a time and kept for the next while the store stays at its version; a new commit
retires the older reads, so a request always sees the latest commit made before it began.
Queries cannot change a read (the guard lets only read-only statements through, and the
engine's configuration is locked), so what one request leaves behind is only warm caches.

Every read runs its queries in the service's worker processes (`isolation`, queries/isolation.py):
a read here holds the connection the guard parses on and column lookups use; the workers keep
their own engines of the same versions.

No read waits for a catalog build it does not need (#34): while another builds the latest
version's catalog (the service's OTLP or labels committer, another process), or the OTLP
committer is about to (`builders`), a request reads the newest version whose catalog is built.
The service's own commits (ingest, labels) build their version's catalog before they answer or
release what they committed, so what they acknowledged is in what the next request reads; the
OTLP committer builds it right after its commit (or the next one). A version nobody is building
is built by the request that needs it, so a query after `tracewh ingest` returned sees what it
committed. A request whose version's catalog was removed before it opened it (builders keep the
newest few) is read again on the newest version (`read`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from ..api import Warehouse
from ..errors import CatalogGone
from ..queries.isolation import QueryWorkers
from ..warehouse.layout import latest_version

T = TypeVar("T")


class Readers:
    def __init__(self, root: Path, memory_limit: str, keep: int, isolation: QueryWorkers | None = None):
        self.root, self.memory_limit, self.keep, self.isolation = root, memory_limit, keep, isolation
        self._store = Warehouse(root)  # asks which version to read (made once: resolving the path cost each request)
        self._idle: list[Warehouse] = []
        self._lock = threading.Lock()
        self._serving: int | None = None  # the version reads are opened at
        # The service's committers that build the newest version's catalog in a moment: while one
        # will, a request reads the newest version whose catalog is built instead of building one
        # itself (a build in a request held the committer's next build up behind the lock).
        self.builders: list[Callable[[], bool]] = []

    def read(self, work: Callable[[Warehouse], T]) -> T:
        """`work` on a read (`reading`); once more, on the newest version then, when the catalog of
        the version it read was removed meanwhile (builders keep the newest few: a request that
        waited in the queue while live ingest made versions could find its own gone)."""
        try:
            with self.reading() as wh:
                return work(wh)
        except CatalogGone:
            with self.reading() as wh:
                return work(wh)

    @contextmanager
    def reading(self) -> Iterator[Warehouse]:
        """A sandboxed read of the store's newest version with a built catalog, for this request alone."""
        version = self._ready(latest_version(self.root / "events"))
        wh = self._take(version) or Warehouse(self.root, version, sandbox=True, memory_limit=self.memory_limit,
                                              isolation=self.isolation)
        gone = False
        try:
            yield wh
        except CatalogGone:
            gone = True  # not kept for the next request
            raise
        finally:
            if gone:
                wh.close()
            else:
                self._give_back(wh)

    def _ready(self, latest: int | None) -> int | None:
        """`latest`, or the newest version with a built catalog while another builds `latest`'s."""
        if latest is None:
            version = None
        else:
            version = self._store.readable_version(latest, built_soon=any(soon() for soon in self.builders))
        with self._lock:
            self._serving = version
        return version

    def _take(self, version: int | None) -> Warehouse | None:
        with self._lock:
            stale = [wh for wh in self._idle if wh.pinned != version]
            self._idle = [wh for wh in self._idle if wh.pinned == version]
            found = self._idle.pop() if self._idle else None
        for wh in stale:
            wh.close()
        return found

    def _give_back(self, wh: Warehouse) -> None:
        with self._lock:
            keep = len(self._idle) < self.keep and wh.pinned == self._serving
            if keep:
                self._idle.append(wh)
        if not keep:
            wh.close()

    def close(self) -> None:
        """Close the reads kept open, stop the workers and remove their spill folder (the server's shutdown)."""
        with self._lock:
            idle, self._idle = self._idle, []
        for wh in idle:
            wh.close()
        if self.isolation is not None:
            self.isolation.close()
