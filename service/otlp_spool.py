"""The OTLP receiver's write-ahead spool and the thread that commits it (service/otlp.py).

A request the receiver has validated is appended to WAREHOUSE/_spool/otlp/ (warehouse/wal.py:
written and fsynced, concurrent requests sharing one fsync) and answered 200 then; the committer
thread takes what waits, in groups, commits each group as one batch (Warehouse.ingest_otlp),
then builds the new version's view catalog (one build for two commits when requests already wait).
The store's work (the commit, the catalog, compaction) runs in a process of its own
(service/commit_process.py): in the server's process, answering requests slowed it through the GIL.
A spool segment is deleted only once every record in it is committed (the Delta commit file
written), so a process killed between a 200 and its commit commits the record when the service
starts again. Exactly once: event ids derive from trace and span ids, so a record committed
before the kill and replayed after it (its segment was not yet deleted) adds nothing.

A request the quality gate refuses at commit time, after its 200, is committed again with the
gate's failing events held in the quarantine (`tracewh quarantine`), and logged; one the
pipeline refuses outright (the receiver ran the same checks before answering, so it should not
happen) is kept in _spool/otlp/refused/ and logged as an error: nothing acknowledged is dropped
silently. Other errors (disk full, a lock) leave the group in the spool and are retried.

The committer also compacts (service/compaction.py): once a partition holds more than the
service's `compact_files` data files, Warehouse.optimize merges them (same answers, every old
version still readable).
"""

from __future__ import annotations

import logging
import os
import queue
import struct
import threading
import time
import uuid
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path

from fastapi import HTTPException

from ..errors import BadInputError, QualityError, UsageError
from ..warehouse.wal import RequestLog
from .commit_process import CommitProcess
from .compaction import Compactor

log = logging.getLogger("tracewh.otlp")
SPOOL = Path("_spool") / "otlp"  # inside the store folder; nothing that lists data files looks here
PAYLOAD_HEADER = struct.Struct("<?I")  # sent as JSON, span count; then the request as the pipeline reads it
LINGER_S = 0.02  # how long a group waits for more requests after its first arrived
# One committer: with the answer no longer waiting for the commit, a second one only split the
# waiting requests into smaller groups (one default SDK exporter: 2,400-2,500 spans/s to
# queryable with one, 1,950 with two; 4 senders: the same).
MAX_GROUP_SPANS = 50_000  # spans in one commit at most
RETRY_AFTER_S = 1
RETRY_COMMIT_S = 1.0  # a commit that failed for another reason than its data is tried again after this


@dataclass
class Spooled:
    body: bytes  # one ExportTraceServiceRequest: serialized protobuf, or one line of OTLP/JSON
    spans: int
    json: bool
    segment: int  # of the spool, released once committed
    arrived: float = field(default_factory=time.monotonic)


class Committer:
    """The spool of the store at `root` and its committer thread. `max_bytes`: request bytes the
    spool holds waiting at most (past it, 503 + Retry-After). A commit's fixed cost (gate, Delta
    log, a file per partition) is paid once per group, not once per request."""

    def __init__(self, root: Path, *, max_bytes: int, compactor: Compactor,
                 linger_s: float = LINGER_S, max_group_spans: int = MAX_GROUP_SPANS):
        self.root, self.folder, self.max_bytes, self.compactor = root, root / SPOOL, max_bytes, compactor
        self.linger_s, self.max_group_spans = linger_s, max_group_spans
        self.waiting: queue.Queue[Spooled] = queue.Queue()
        self._spool: RequestLog | None = None
        self._lock = threading.Lock()  # opening the spool, starting the thread
        self._thread: threading.Thread | None = None
        self._catalog_due = False  # a commit of this committer whose catalog it has not built yet
        # compacting: a compaction makes a version whose catalog this committer builds (readers that
        # saw it before that build would have built it themselves, holding the next one up)
        self._compacting = False
        self.process = CommitProcess(root)
        self.ready = threading.Event()  # its process is loaded: a request is committed without waiting for it

    def building_soon(self) -> bool:
        """Whether the committer will build the newest version's catalog in a moment (Readers)."""
        return self._catalog_due or self._compacting

    def start(self, ingest: bool) -> None:
        """Commit what an earlier process spooled and did not commit (killed, or stopped before it
        could): at start, in the background. With `ingest` (the service has a token) the committer
        starts now; without, and without a spool, nothing is started or opened."""
        if ingest:
            self._empty_catalog()
            self._start_thread()
        if not self.folder.is_dir():
            return
        try:
            spool = self._open()
        except UsageError as error:
            log.warning("not committing the OTLP spool: %s", error)
            return
        for segment, payload in spool.recovered():
            as_json, spans = PAYLOAD_HEADER.unpack_from(payload)
            self.waiting.put(Spooled(payload[PAYLOAD_HEADER.size:], spans, as_json, segment))
        if not self.waiting.empty():
            log.info("committing %d OTLP requests spooled before the service last stopped", self.waiting.qsize())
            self._start_thread()

    def preload(self) -> None:
        """Start the commit process now, in the background, so that the first request does not wait
        for its imports (about 0.7 s): when the service starts serving (the app's startup), not when an
        app is only made."""
        threading.Thread(target=self._load, daemon=True, name="tracewh-otlp-commit-process-start").start()

    def _load(self) -> None:
        try:
            self.process.start()
            self.ready.set()
        except RuntimeError:
            log.exception("starting the OTLP commit process failed; the first commit starts it again")

    def close(self) -> None:
        """End the commit process (the service stopping): what is spooled and not committed stays spooled."""
        self.process.close()

    def _empty_catalog(self) -> None:
        """A store without data yet: its empty catalog built now, before the first request, so that
        the first commit's catalog is derived from it instead of built from scratch (0.7 s). Here,
        not in a committer thread: a DuckDB build running in another thread while a process forks
        (the ingest workers do) crashed the child."""
        from ..queries.catalog import CatalogUnavailable, ensure_empty_catalog
        from ..warehouse.layout import latest_version

        if latest_version(self.root / "events") is None:
            with suppress(CatalogUnavailable):  # no catalog can be kept here: queries make their views
                ensure_empty_catalog(self.root)

    def accept(self, body: bytes, spans: int, as_json: bool) -> None:
        """Spool a validated request durably (blocking: it fsyncs), to be committed in the background;
        HTTPException 503 when the spool is full or another process holds it."""
        try:
            spool = self._open()
        except UsageError as error:
            raise HTTPException(503, str(error)) from None
        waiting = spool.waiting_bytes
        if waiting and waiting + len(body) > self.max_bytes:
            raise HTTPException(503, f"{waiting} bytes of requests are waiting to be committed; retry shortly",
                                headers={"Retry-After": str(RETRY_AFTER_S)})
        segment = spool.append(PAYLOAD_HEADER.pack(as_json, spans) + body)
        self.waiting.put(Spooled(body, spans, as_json, segment))
        self._start_thread()

    def _open(self) -> RequestLog:
        with self._lock:
            if self._spool is None:
                self._spool = RequestLog(self.folder)
            return self._spool

    def _start_thread(self) -> None:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, daemon=True, name="tracewh-otlp-committer")
                self._thread.start()

    def _run(self) -> None:
        while True:
            group = self._next_group()
            deferred = self._catalog_due  # the last cycle left its catalog to this one
            self._catalog_due = True
            for as_json in (False, True):  # exporters send one encoding: a group rarely holds both
                if same := [r for r in group if r.json == as_json]:
                    self._commit(same, as_json)
            # Requests waiting already: commit them first and build one catalog for both commits
            # (one exporter's last requests were queryable a catalog build sooner), but never
            # twice in a row, so that a steady stream does not keep new spans out of the reads.
            if deferred or self.waiting.empty():
                self._prepare()
            self._compact()

    def _compact(self) -> None:
        """Compact if due; readers meanwhile read the version before any the compaction makes."""
        self._compacting = True
        try:
            self.compactor.compact_if_due(self.process, later=self._catalog_with_next_commit)
        finally:
            self._compacting = False

    def _catalog_with_next_commit(self) -> bool:
        """After a compaction: whether requests wait, and then its catalog is left to the next cycle,
        derived with that commit's (readers read the version before it meanwhile: the same events)."""
        if self.waiting.empty():
            return False
        self._catalog_due = True
        return True

    def _prepare(self) -> None:
        """The newest version's catalog built: the service's reads open the newest version whose
        catalog is built. A failure leaves the build to the first read that needs it."""
        started = time.monotonic()
        try:
            self.process.prepare()
            log.debug("built the newest version's catalog in %.3f s", time.monotonic() - started)
        except Exception:  # noqa: BLE001 - the commit stands; a read builds the catalog or reports why
            log.exception("building the catalog after an OTLP commit failed")
        finally:
            self._catalog_due = False

    def _next_group(self) -> list[Spooled]:
        """Every request waiting, and those arriving until LINGER_S after the first, up to MAX_GROUP_SPANS."""
        group = [self.waiting.get()]
        spans, deadline = group[0].spans, group[0].arrived + self.linger_s
        while spans < self.max_group_spans:
            try:
                request = self.waiting.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                break
            group.append(request)
            spans += request.spans
        return group

    def _commit(self, group: list[Spooled], as_json: bool) -> None:
        """Commit the group as one batch and release its records; a refused group request by request."""
        encoding = "json" if as_json else "protobuf"
        started = time.monotonic()
        try:
            report = self.process.ingest_otlp([r.body for r in group], encoding=encoding)
            self.ready.set()  # the commit process is loaded (if the service's start did not load it)
        except (BadInputError, QualityError) as error:
            if len(group) > 1:  # one request's spans refused: commit the others without it
                for request in group:
                    self._commit([request], as_json)
            else:
                self._hold(group[0], encoding, error)
            return
        except Exception:  # noqa: BLE001 - not the data's fault: keep it spooled and try again
            log.exception("committing %d spooled OTLP requests failed; retrying in %g s", len(group), RETRY_COMMIT_S)
            time.sleep(RETRY_COMMIT_S)
            for request in group:
                self.waiting.put(request)
            return
        log.debug("committed %d requests, %d spans (%d new) in %.2f s", len(group), sum(r.spans for r in group),
                  report.added, time.monotonic() - started)
        self._release(group)

    def _hold(self, request: Spooled, encoding: str, refusal: Exception) -> None:
        """An acknowledged request refused at commit: its failing events to the quarantine, the rest
        committed; if even that is refused, the request kept under refused/. Logged either way."""
        try:
            report = self.process.ingest_otlp([request.body], encoding=encoding, quarantine=True)
            log.warning("an acknowledged OTLP request of %d spans failed the quality gate at commit; %d events held "
                        "in the quarantine (tracewh quarantine), %d committed: %s", request.spans, report.quarantined,
                        report.added, refusal)
        except (BadInputError, QualityError) as error:
            kept = self.folder / "refused" / f"{uuid.uuid4().hex}.{'json' if request.json else 'binpb'}"
            kept.parent.mkdir(mode=0o755, exist_ok=True)
            with open(os.open(kept, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644), "wb") as out:
                out.write(request.body)
            log.error("an acknowledged OTLP request of %d spans was refused at commit and kept in %s: %s",
                      request.spans, kept, error)
        self._release([request])

    def _release(self, group: list[Spooled]) -> None:
        assert self._spool is not None
        for request in group:
            self._spool.release(request.segment, PAYLOAD_HEADER.size + len(request.body))

