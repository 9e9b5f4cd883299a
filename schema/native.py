"""Writing the native `tracewh-events/1` format (reading is the native ingest adapter)."""

from __future__ import annotations

import gzip
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import orjson

from . import NATIVE_FORMAT


def header(**extra: Any) -> bytes:
    return orjson.dumps({"format": NATIVE_FORMAT, **extra}) + b"\n"


def dumps_event(event: dict[str, Any]) -> bytes:
    """One event line; None values are left out, times are ISO-8601 UTC."""
    return orjson.dumps({k: v for k, v in event.items() if v is not None}, option=orjson.OPT_UTC_Z) + b"\n"


@contextmanager
def open_native(path: Path, **header_extra: Any) -> Iterator[IO[bytes]]:
    """A file in the native format, gzip-compressed when the name ends in .gz; header written."""
    if path.name.endswith(".gz"):  # mtime=0: same events, same bytes, same digest
        out_file: IO[bytes] = gzip.GzipFile(path, "wb", compresslevel=6, mtime=0)
    else:
        out_file = open(path, "wb")
    with out_file as out:
        out.write(header(**header_extra))
        yield out
