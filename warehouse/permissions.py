"""File modes of what the store writes: the user's umask, but never wider than 0644 / 0755.

delta-rs, DuckDB and pyarrow create files with mode 0666 minus the umask; a umask of 000
would leave world-writable Parquet files, and anyone who can write a committed file can
change what every query returns. The umask is process-wide, so the narrowing is counted:
the last writer to finish puts the user's umask back.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager

NARROWEST_WIDENING = 0o022  # group and others never get write permission
_lock = threading.Lock()
_writers = 0
_saved: int | None = None


@contextmanager
def store_umask() -> Iterator[None]:
    """While store files are written: umask |= 022."""
    global _writers, _saved
    with _lock:
        if _writers == 0:
            _saved = os.umask(0o777)
            os.umask(_saved | NARROWEST_WIDENING)
        _writers += 1
    try:
        yield
    finally:
        with _lock:
            _writers -= 1
            if _writers == 0 and _saved is not None:
                os.umask(_saved)
                _saved = None
