"""Which files are native event lines, and their records: the header checked, then one event a line."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ....errors import BadInputError
from ....schema import NATIVE_FORMAT
from ...context import AdapterContext
from ...jsonlines import json_lines
from ...sources import SourceFile

FORMAT = "native"


def sniff(file: SourceFile, ctx: AdapterContext) -> str | None:
    first = ctx.first(file)
    return FORMAT if first is not None and first.get("format") == NATIVE_FORMAT else None


def records(file: SourceFile, ctx: AdapterContext) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line, record) for every event line after the header."""
    # Spool files may end in a line a crash cut short: skip it, keep the rest.
    lines = json_lines(file, ctx.limits.max_line_bytes, ctx.progress, torn_tail_ok=True)
    header = next(lines, None)
    if header is None or header[1].get("format") != NATIVE_FORMAT:
        raise BadInputError(file.display, f'the first line must be the header {{"format": "{NATIVE_FORMAT}"}}', line=1)
    for line_no, record in lines:
        if "format" in record:
            raise BadInputError(file.display, "a header line in the middle of the file (concatenated files?)", line=line_no, field="format")
        yield line_no, record
