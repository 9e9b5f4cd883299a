"""Private folders for batches in preparation, and the removal of those a dead process left.

Each folder `_staging/<name>/` has a lock file `_staging/<name>.lock`, created and locked
(flock) before the folder and held for the folder's whole life; the OS releases it when the
process dies, however it dies. So:

- a folder whose lock file is missing, or whose lock can be taken, belongs to no live
  process and is removed (by the next ingest, whatever it finds, and by `tracewh doctor`);
- a pid in the name would not do: once the pid is reused, the folder would live forever.

The lock-file dance is the usual one: after locking, the creator checks that the path still
names the file it locked (a cleaner may have unlinked it in between) and starts over if not.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

LOCK_SUFFIX = ".lock"


@contextmanager
def staging_folder(base: Path) -> Iterator[Path]:
    """A new folder under `base`, owned by this process until the block ends, then removed."""
    base.mkdir(parents=True, exist_ok=True)
    name = f"{os.getpid()}-{uuid.uuid4().hex[:12]}"
    lock = _acquire(base / (name + LOCK_SUFFIX))
    path = base / name
    try:
        path.mkdir()
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
        _release(lock, base / (name + LOCK_SUFFIX))


def remove_dead(base: Path) -> list[Path]:
    """Remove the folders (and lock files) of staging areas whose process is gone."""
    if not base.is_dir():
        return []
    removed = []
    for path in sorted(base.iterdir()):
        if path.name.endswith(LOCK_SUFFIX):
            folder = path.with_name(path.name[: -len(LOCK_SUFFIX)])
            if not folder.exists():
                _remove_if_unowned(path, None)
        elif path.is_dir() and _remove_if_unowned(path.with_name(path.name + LOCK_SUFFIX), path):
            removed.append(path)
    return removed


def _remove_if_unowned(lock_path: Path, folder: Path | None) -> bool:
    try:
        handle = open(lock_path, "r+")
    except FileNotFoundError:  # folders are made after their lock: no lock, no owner
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)
        return folder is not None
    with handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False  # a live process holds it
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)
        lock_path.unlink(missing_ok=True)
        return folder is not None


def _acquire(lock_path: Path) -> IO[str]:
    while True:
        handle = open(lock_path, "a+")
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            if os.stat(lock_path).st_ino == os.fstat(handle.fileno()).st_ino:
                return handle
        except FileNotFoundError:
            pass
        handle.close()  # a cleaner unlinked it between our open and our lock: start over


def _release(handle: IO[str], lock_path: Path) -> None:
    lock_path.unlink(missing_ok=True)
    handle.close()
