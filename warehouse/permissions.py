"""File modes of what the store writes: the user's umask, but never wider than 0644 / 0755, nor
than the store's own folder.

delta-rs, DuckDB and pyarrow create files with mode 0666 minus the umask; a umask of 000
would leave world-writable Parquet files, and anyone who can write a committed file can
change what every query returns. A store whose folder is private (0700: one made by
`tracewh.record(..., warehouse=...)` from its 0700 spool, or one the user made so) holds what
may be prompts: what group and others may not do to the folder, they may not do to any file
written in it either. The umask is process-wide, so the narrowing is counted: the last writer
to finish puts the user's umask back.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

NARROWEST_WIDENING = 0o022  # group and others never get write permission
_lock = threading.Lock()
_writers = 0
_saved: int | None = None


@contextmanager
def store_umask(root: Path | None = None) -> Iterator[None]:
    """While store files are written: umask |= 022, and |= the group/other bits the store's
    folder `root` lacks (when it exists). Writers that overlap narrow it together (more private,
    never less) until the last one ends."""
    global _writers, _saved
    narrowing = NARROWEST_WIDENING | _denied_by(root)
    with _lock:
        current = os.umask(0o777)
        if _writers == 0:
            _saved = current
        os.umask(current | narrowing)
        _writers += 1
    try:
        yield
    finally:
        with _lock:
            _writers -= 1
            if _writers == 0 and _saved is not None:
                os.umask(_saved)
                _saved = None


def _denied_by(root: Path | None) -> int:
    """The group and other permission bits the folder `root` does not grant (0 when it is not there)."""
    if root is None:
        return 0
    try:
        return ~os.stat(root).st_mode & 0o077
    except OSError:
        return 0


def create_like(root: Path, model: Path) -> None:
    """Create the store folder `root`, when it does not exist yet, with the permission bits of the
    folder `model` (a spool): a store created from private data is private. An existing store
    keeps its modes; missing parents are made as usual."""
    if root.exists():
        return
    mode = os.stat(model).st_mode & 0o777
    root.parent.mkdir(parents=True, exist_ok=True)
    try:
        root.mkdir(mode=mode)
    except FileExistsError:  # made meanwhile by another writer: it keeps its modes
        return
    os.chmod(root, mode)  # mkdir's mode is narrowed by the umask: set it exactly
