"""People's labels acknowledged on durability (POST /labels and the labelling page, #34).

A label the service takes is checked and turned into its `judgment` event at once
(Warehouse.label_events), the event's line appended to WAREHOUSE/_spool/labels/
(warehouse/wal.py: written and fsynced) and answered then; one committer thread commits what
waits, in groups (those given within LINGER_S of the first), then builds the new version's
view catalog, and only then forgets the labels as pending. Until that moment the labels are
*pending*: the next label of the same annotator and target supersedes the pending one (not
the one before it), and the labelling page leaves their items out of what it offers next and
counts them in its progress. So a person labelling never waits for a commit, and never sees
the item they just labelled again.

Exactly once after kill -9: the spool keeps the event lines themselves, whose ids derive from
their content and the label they supersede, and a segment is deleted only once all of it is
committed; replaying a line already committed adds nothing (the store skips stored event ids).
A group the quality gate refuses after its answer is kept in _spool/labels/refused/ and logged,
never dropped silently. The committer compacts small files as the OTLP one does
(service/compaction.py).
"""

from __future__ import annotations

import logging
import os
import queue
import threading
import time
import uuid
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson
from fastapi import HTTPException

from ..errors import BadInputError, QualityError, UsageError
from ..warehouse.wal import RequestLog
from .compaction import Compactor
from .priority import yield_cpu

if TYPE_CHECKING:
    from ..api import Warehouse
    from ..ingest.judging.labels import LabelInput, LabelReport

log = logging.getLogger("tracewh.labels")
SPOOL = Path("_spool") / "labels"
RETRY_COMMIT_S = 1.0
# How long a group waits for more labels after its first: a person labelling keeps giving labels,
# and each commit (and the catalog it builds) takes the cores the next page needs. Pending labels
# count on the labelling page meanwhile; a query sees them this much later (plus the commit).
LINGER_S = 2.0
Key = tuple[str, str, str]  # rubric, target_id, annotator


@dataclass
class Spooled:
    lines: bytes  # the events, as native JSON lines (schema/native.py)
    labels: dict[Key, dict[str, Any]]  # what each key's label is once these lines are in (labels.current_of)
    segment: int


def spooled(lines: bytes, segment: int, events: list[dict[str, Any]] | None = None) -> Spooled:
    """A spool record and the labels it gives (its events parsed from `lines` unless given)."""
    from ..ingest.judging.labels import current_of

    events = events if events is not None else [orjson.loads(line) for line in lines.splitlines()]
    return Spooled(lines, {_key(e): current_of(e) for e in events}, segment)


class LabelSpool:
    """The labels spool of the store at `root` and its committer thread."""

    def __init__(self, root: Path, compactor: Compactor):
        self.root, self.folder, self.compactor = root, root / SPOOL, compactor
        self.waiting: queue.Queue[Spooled] = queue.Queue()
        self._pending: dict[Key, dict[str, Any]] = {}  # accepted, not yet queryable
        self._lock = threading.Lock()  # the log, pending, the thread
        self._accepting = threading.Lock()  # one label decision at a time: each sees the last one's event
        self._log: RequestLog | None = None
        self._thread: threading.Thread | None = None
        self._checker: Warehouse | None = None  # reads the store for accept (under _accepting)

    def start(self) -> None:
        """Commit what an earlier process spooled and did not commit (in the background)."""
        if not self.folder.is_dir():
            return
        try:
            spool = self._open()
        except UsageError as error:
            log.warning("not committing the labels spool: %s", error)
            return
        for segment, lines in spool.recovered():
            self._queue(spooled(lines, segment))

    def accept(self, items: list[LabelInput]) -> LabelReport:
        """Check the labels against the store and what is pending, spool their events durably
        (fsync) and return; BadInputError (nothing spooled) for a label that does not fit."""
        from ..api import Warehouse
        from ..schema.native import dumps_event

        with self._accepting:
            with self._lock:
                pending = dict(self._pending)
            if self._checker is None:
                self._checker = Warehouse(self.root)  # kept: it follows the store to each new version
            report, events = self._checker.label_events(items, pending=pending)
            if not events:
                return report
            lines = b"".join(dumps_event(e) for e in events)
            try:
                segment = self._open().append(lines)
            except UsageError as error:
                raise HTTPException(503, str(error)) from None
            self._queue(spooled(lines, segment, events))
        return report

    def pending(self, rubric: str | None = None) -> dict[Key, dict[str, Any]]:
        """Labels accepted and not yet queryable (of one rubric, or all), by (rubric, target_id, annotator)."""
        with self._lock:
            return {k: v for k, v in self._pending.items() if rubric is None or k[0] == rubric}

    def close(self) -> None:
        with self._accepting, self._lock:
            if self._log is not None:
                self._log.close()
            if self._checker is not None:
                self._checker.close()

    def _open(self) -> RequestLog:
        with self._lock:
            if self._log is None:
                self._log = RequestLog(self.folder)
            return self._log

    def _queue(self, record: Spooled) -> None:
        with self._lock:
            self._pending.update(record.labels)
            self.waiting.put(record)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, daemon=True, name="tracewh-label-committer")
                self._thread.start()

    def _run(self) -> None:
        from ..api import Warehouse

        yield_cpu()  # a person waiting for the next item comes before the commit that makes their last label queryable
        warehouse = Warehouse(self.root)  # kept: it follows the store to each new version
        while True:
            group = [self.waiting.get()]
            deadline = time.monotonic() + LINGER_S
            while (left := deadline - time.monotonic()) > 0:
                with suppress(queue.Empty):
                    group.append(self.waiting.get(timeout=left))
            self._commit(warehouse, group)
            self.compactor.compact_if_due(warehouse)

    def _commit(self, warehouse: Warehouse, group: list[Spooled]) -> None:
        """Commit the group as one batch, build the new version's catalog (so a reader that no
        longer sees the labels pending sees them stored), release and forget them."""
        lines = b"".join(r.lines for r in group)
        try:
            warehouse.commit_label_lines(lines)
            warehouse.prepare()  # the catalog of the version just committed
        except (BadInputError, QualityError) as error:
            self._keep_refused(lines, error)
        except Exception:  # noqa: BLE001 - not the labels' fault (disk full, a lock): keep them and retry
            log.exception("committing %d spooled labels failed; retrying in %g s", len(group), RETRY_COMMIT_S)
            threading.Event().wait(RETRY_COMMIT_S)
            for record in group:
                self.waiting.put(record)
            return
        with self._lock:
            for record in group:
                for key, label in record.labels.items():
                    if self._pending.get(key) == label:  # not superseded meanwhile
                        del self._pending[key]
                assert self._log is not None
                self._log.release(record.segment, len(record.lines))

    def _keep_refused(self, lines: bytes, error: Exception) -> None:
        kept = self.folder / "refused" / f"{uuid.uuid4().hex}.jsonl"
        kept.parent.mkdir(mode=0o755, exist_ok=True)
        with open(os.open(kept, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644), "wb") as out:
            out.write(lines)
        log.error("acknowledged labels were refused at commit and kept in %s: %s", kept, error)


def _key(event: dict[str, Any]) -> Key:
    payload = event["payload"]
    return payload["rubric"], payload["target_id"], payload["rater"]
