"""`tracewh-events/1`: JSON Lines of events, written by `tracewh export-events` and live capture."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ...errors import BadInputError
from ...schema import NATIVE_FORMAT
from ..context import AdapterContext
from ..jsonlines import json_lines
from ..sources import SourceFile

name = "native"
description = f"{NATIVE_FORMAT} event lines (export-events, live capture spool)"


def sniff(file: SourceFile, first: dict[str, Any] | None) -> bool:
    return first is not None and first.get("format") == NATIVE_FORMAT


def events(file: SourceFile, ctx: AdapterContext) -> Iterator[tuple[int, dict[str, Any]]]:
    # Spool files may end in a line a crash cut short: skip it, keep the rest.
    records = json_lines(file, ctx.limits.max_line_bytes, ctx.progress, torn_tail_ok=True)
    header = next(records, None)
    if header is None or header[1].get("format") != NATIVE_FORMAT:
        raise BadInputError(file.display, f'the first line must be the header {{"format": "{NATIVE_FORMAT}"}}', line=1)
    for line_no, record in records:
        if "format" in record:
            raise BadInputError(file.display, "a header line in the middle of the file (concatenated files?)", line=line_no, field="format")
        record.setdefault("seq", line_no)
        yield line_no, record
