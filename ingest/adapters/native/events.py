"""Native records are events already; only `seq` has a default, the line number."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ...context import AdapterContext
from ...sources import SourceFile
from .records import records


def events(file: SourceFile, ctx: AdapterContext) -> Iterator[tuple[int, dict[str, Any]]]:
    for line, record in records(file, ctx):
        record.setdefault("seq", line)
        yield line, record
