"""Which files are BFCL result or score files, what their paths say, and their lines.

Both are JSON Lines despite `.json` (docs/formats/bfcl.md §2-§3). Recognised by the first
record: `id` and `result` (a result file) or the score summary's `accuracy`,
`correct_count` and `total_count`. Model and category come from the path (§5).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from ...context import AdapterContext
from ...fields import Fields
from ...jsonlines import json_lines
from ...sources import SourceFile

FORMAT = "bfcl"
FILE_NAME = re.compile(r"BFCL_v\d+_(?P<category>.+?)_(?P<kind>result|score)\.json$")
SUMMARY_KEYS = frozenset({"accuracy", "correct_count", "total_count"})


def sniff(file: SourceFile, ctx: AdapterContext) -> str | None:
    first = ctx.first(file)
    if first is None:
        return None
    result = "id" in first and "result" in first
    return FORMAT if result or SUMMARY_KEYS <= first.keys() else None


def model_of(file: SourceFile, ctx: AdapterContext) -> str:
    """`--attr model=...`, else the folder after `result/` or `score/` in the path."""
    if ctx.attrs.get("model"):
        return ctx.attrs["model"]
    parts = file.name.split("/")
    for marker in ("result", "score"):
        if marker in parts[:-1] and parts.index(marker) + 1 < len(parts) - 1:
            return parts[parts.index(marker) + 1]
    return "unknown"


def category_of(file: SourceFile) -> str | None:
    found = FILE_NAME.search(file.name.rsplit("/", 1)[-1])
    return found["category"] if found else None


def rows(file: SourceFile, ctx: AdapterContext) -> Iterator[Fields]:
    for line, record in json_lines(file, ctx.limits.max_line_bytes, ctx.progress):
        yield Fields(record, file.display, line)
