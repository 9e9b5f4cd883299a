"""Writing the release folder atomically: everything is written into a temporary folder beside
it, which is renamed into place once complete, so DIR holds a whole release or what it held
before, never half of one (also when the secret scan refuses, or the process is stopped).

An existing DIR must be empty, or a release (`--overwrite` replaces it); never the store itself,
nor a folder holding it."""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ...errors import UsageError
from ...schema.release import METADATA as MARKER



def check_target(out: Path, store: Path, overwrite: bool) -> Path:
    """The absolute folder to write, refused when writing it would lose something."""
    out = Path(os.path.abspath(out))
    real, store = Path(os.path.realpath(out)), Path(os.path.realpath(store))
    if real == store or real in store.parents or store in real.parents:
        raise UsageError(f"{out}: the release folder cannot be the store, hold it, or lie inside it ({store})")
    if out.exists() and not out.is_dir():
        raise UsageError(f"{out} exists and is not a folder")
    if out.is_dir() and any(out.iterdir()):
        if not overwrite:
            raise UsageError(f"{out} exists and is not empty; --overwrite replaces a previous release there")
        if not (out / MARKER).is_file() or not (out / "events").is_dir():
            raise UsageError(f"{out} is not a tracewh release (no {MARKER} and events/); --overwrite replaces only "
                             "a release: remove the folder yourself")
    return out


@contextmanager
def building(out: Path) -> Iterator[Path]:
    """A temporary folder beside `out`; renamed to `out` when the block ends without an error,
    removed in any case."""
    out.parent.mkdir(parents=True, exist_ok=True)
    temporary = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".partial", dir=out.parent))
    try:
        umask = os.umask(0)
        os.umask(umask)
        temporary.chmod(0o777 & ~umask)  # a folder to publish: as a new folder would be, not mkdtemp's 0700
        yield temporary
        _publish(temporary, out)
    finally:
        shutil.rmtree(temporary, ignore_errors=True)


def _publish(temporary: Path, out: Path) -> None:
    if not out.exists():
        os.rename(temporary, out)
        return
    if not any(out.iterdir()):
        os.rename(temporary, out)  # onto an empty folder: POSIX rename replaces it
        return
    previous = out.with_name(f".{out.name}.{uuid.uuid4().hex[:8]}.previous")
    os.rename(out, previous)
    os.rename(temporary, out)
    shutil.rmtree(previous, ignore_errors=True)
