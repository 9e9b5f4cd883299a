"""A crash-safe spool of native-format event files, private to the user who records.

Each recording writes its own folder; each file starts with the native header. Every event
is one `write()` of one whole line to a file opened with O_APPEND, made before the recorded
call returns to its caller: once a call has returned, its event is in the operating system,
and a kill -9 of the process loses nothing. Power loss can still lose what the OS had not
written to disk yet, unless the spool is opened with `fsync=True` (one fsync per event).
A crash can at worst leave a torn final line, which native ingest skips (and reports).

Prompts and results may be in the spool (`capture_content=True`), so folders are created
0700 and files 0600. Files rotate at `max_bytes`.
"""

from __future__ import annotations

import os
import re
import secrets
from datetime import datetime, timezone
from pathlib import Path

from ...schema.native import header

DEFAULT_MAX_BYTES = 64 << 20
FOLDER_MODE = 0o700
FILE_MODE = 0o600


class SpoolWriter:
    def __init__(self, root: Path, run_id: str, max_bytes: int = DEFAULT_MAX_BYTES, fsync: bool = False):
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S")
        safe_run = re.sub(r"[^A-Za-z0-9._-]+", "_", run_id)[:80]
        private_folder(Path(root))
        self.folder = Path(root) / f"{safe_run}-{stamp}-{os.getpid()}-{secrets.token_hex(2)}"
        private_folder(self.folder)
        self.max_bytes, self.fsync, self.part, self.fd, self.size = max_bytes, fsync, 0, -1, 0
        self._rotate()

    def _rotate(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
        self.part += 1
        path = self.folder / f"part-{self.part:05d}.jsonl"
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, FILE_MODE)
        os.fchmod(self.fd, FILE_MODE)  # os.open's mode only applies to a new file
        self.size = 0
        self.write(header(generator="tracewh record"))

    def write(self, data: bytes) -> None:
        """Hand `data` (whole lines) to the OS now; with fsync, wait until it is on disk."""
        if self.size > self.max_bytes:
            self._rotate()
        view = memoryview(data)
        while view:  # os.write may write less than asked
            view = view[os.write(self.fd, view):]
        if self.fsync:
            os.fsync(self.fd)
        self.size += len(data)

    def close(self) -> None:
        if self.fd >= 0:
            os.fsync(self.fd)  # a clean end is durable even without per-event fsync
            os.close(self.fd)
            self.fd = -1


def private_folder(path: Path) -> None:
    """Create `path` (and missing parents) readable by its owner only."""
    missing = [p for p in [path, *path.parents] if not p.exists()]
    for folder in reversed(missing):
        folder.mkdir(mode=FOLDER_MODE, exist_ok=True)
    if path in missing:
        os.chmod(path, FOLDER_MODE)  # mkdir's mode is narrowed by the umask, never widened: set it exactly
