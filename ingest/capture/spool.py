"""A crash-safe spool of native-format event files.

Each recording writes its own folder; each file starts with the native header. A batch
of lines goes out in one append write followed by fsync, so a crash can at worst leave a
torn final line, which native ingest skips (and reports). Files rotate at `max_bytes`.
"""

from __future__ import annotations

import os
import re
import secrets
from datetime import datetime, timezone
from pathlib import Path

from ...schema.native import header

DEFAULT_MAX_BYTES = 64 << 20


class SpoolWriter:
    def __init__(self, root: Path, run_id: str, max_bytes: int = DEFAULT_MAX_BYTES):
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S")
        safe_run = re.sub(r"[^A-Za-z0-9._-]+", "_", run_id)[:80]
        self.folder = Path(root) / f"{safe_run}-{stamp}-{os.getpid()}-{secrets.token_hex(2)}"
        self.folder.mkdir(parents=True, exist_ok=True)
        self.max_bytes, self.part, self.fd, self.size = max_bytes, 0, -1, 0
        self._rotate()

    def _rotate(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
        self.part += 1
        path = self.folder / f"part-{self.part:05d}.jsonl"
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self.size = 0
        self._write(header(generator="tracewh record"))

    def _write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:  # os.write may write less than asked
            view = view[os.write(self.fd, view):]
        os.fsync(self.fd)
        self.size += len(data)

    def write_batch(self, lines: list[bytes]) -> None:
        if not lines:
            return
        if self.size > self.max_bytes:
            self._rotate()
        self._write(b"".join(lines))

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
