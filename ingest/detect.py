"""Pick the adapter for a data file by looking at its name and first record."""

from __future__ import annotations

from types import ModuleType

from ..errors import BadInputError
from .adapters import ADAPTERS
from .jsonlines import first_record
from .sources import Limits, SourceFile


def detect(file: SourceFile, limits: Limits) -> ModuleType:
    first = first_record(file, limits.max_line_bytes)
    for adapter in ADAPTERS:
        if adapter.sniff(file, first):
            return adapter
    known = "; ".join(f"{a.name}: {a.description}" for a in ADAPTERS)
    what = "its first line is not a JSON object" if first is None else f"first record has keys {sorted(first)[:8]}"
    raise BadInputError(file.display, f"no adapter recognises this file ({what}). Supported formats: {known}", line=1)
