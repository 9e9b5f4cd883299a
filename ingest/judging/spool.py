"""Answers kept safe between the judge's reply and the commit that stores them.

Each answer's event lines go to a spool file (the capture spool, ingest/capture/spool.py,
with an fsync per answer) before the answer counts: a kill -9 after that loses nothing and
the next run commits it instead of paying for it again. Spools live under
$TRACEWH_HOME/judging/spool/<store>/, one folder per run, locked (flock) while the run
lives, so a run recovers only what dead runs left; a recovered line that the store already
holds adds nothing (its event id derives from its answer key).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

from ...paths import default_home
from ..capture.spool import SpoolWriter

LOCK = "lock"


def spool_root(store_path: Path) -> Path:
    return default_home() / "judging" / "spool" / hashlib.sha256(str(store_path).encode()).hexdigest()[:16]


class AnswerSpool:
    """This run's spool: write_answer() returns once the lines are on disk."""

    def __init__(self, store_path: Path, run_id: str):
        self.writer = SpoolWriter(spool_root(store_path), run_id, fsync=True)
        self.folder = self.writer.folder
        self._lock = os.open(self.folder / LOCK, os.O_WRONLY | os.O_CREAT, 0o600)
        fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)

    def write_answer(self, lines: list[bytes]) -> None:
        """The event lines of the answers that came in together: one write, one fsync."""
        if lines:
            self.writer.write(b"".join(lines))

    def close(self, committed: bool) -> None:
        """Close; remove the folder when everything in it is committed."""
        self.writer.close()
        if committed:
            shutil.rmtree(self.folder, ignore_errors=True)
        os.close(self._lock)


def orphans(store_path: Path) -> Iterator[tuple[Path, bytes]]:
    """(folder, event lines) of each spool whose run is gone, its lock held meanwhile;
    the caller removes the folder once the lines are committed. A torn last line (the
    process died while writing it: its answer was never counted) is left out."""
    root = spool_root(store_path)
    if not root.is_dir():
        return
    for folder in sorted(p for p in root.iterdir() if (p / LOCK).is_file()):
        fd = os.open(folder / LOCK, os.O_WRONLY)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue  # a live run's
            yield folder, b"".join(_whole_event_lines(part) for part in sorted(folder.glob("part-*.jsonl")))
        finally:
            os.close(fd)


def _whole_event_lines(part: Path) -> bytes:
    data = part.read_bytes()
    data = data[:data.rfind(b"\n") + 1]  # up to the last whole line
    return b"".join(line + b"\n" for line in data.split(b"\n")[1:] if line.strip())  # the header line left out
