"""`tracewh-events/1`: JSON Lines of events, written by `tracewh export-events` and live capture.

A header line `{"format": "tracewh-events/1"}`, then one event per line with the schema's
column names (docs/events.md, "Native format"; there is no docs/formats/ page, the format
being tracewh's own). Read as written: no mapping, only `seq` defaults to the line number.
Read a block of lines at a time as Arrow columns (columns.py), or line by line (records.py,
events.py) for small files and for blocks the bulk checks do not clear. A large file is cut
into ranges of lines (ranges.py), which the staging workers read side by side.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ....schema import NATIVE_FORMAT
from ...context import AdapterContext
from ...sources import SourceFile
from ..base import EventBatch, FileAdapter, Group
from . import events as per_line
from . import ranges, records

# Files smaller are read line by line: a DuckDB connection costs more than reading them, and
# columns.py is not even imported (with it pyarrow.compute: 29 ms, more than a small ingest's staging).
BULK_MIN_BYTES = 1 << 20


class NativeAdapter(FileAdapter):
    name = "native"
    description = f"{NATIVE_FORMAT} event lines (export-events, live capture spool)"

    def sniff(self, file: SourceFile, ctx: AdapterContext) -> str | None:
        return records.sniff(file, ctx)

    def groups(self, files: list[SourceFile], ctx: AdapterContext) -> list[Group]:
        return [part for group in super().groups(files, ctx) for part in ranges.split(group)]

    def read(self, fmt: str, file: SourceFile, ctx: AdapterContext) -> Iterator[tuple[int, dict[str, Any]] | EventBatch]:
        if file.first_line == 1 and (file.plain_bytes or file.stored_bytes) < BULK_MIN_BYTES:
            return per_line.events(file, ctx)
        from . import columns  # here: see BULK_MIN_BYTES

        return columns.read(file, ctx)


ADAPTER = NativeAdapter()
