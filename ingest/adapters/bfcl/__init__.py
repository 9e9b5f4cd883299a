"""BFCL multi-turn result and score files (docs/formats/bfcl.md), each file standing alone.

Result files `result/<model>/.../BFCL_v<N>_<category>_result.json` (§2) and score files
`score/<model>/.../BFCL_v<N>_<category>_score.json` (§3), both JSON Lines. records.py
recognises them and reads model and category off the path; events.py turns result lines
into LLM-call, tool-call and task events and score lines into judgments (§5).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ...context import AdapterContext
from ...sources import SourceFile
from ..base import FileAdapter
from . import records


class BfclAdapter(FileAdapter):
    name = "bfcl"
    description = "BFCL multi-turn result and score files (BFCL_v*_<category>_result.json / _score.json)"

    def sniff(self, file: SourceFile, ctx: AdapterContext) -> str | None:
        return records.sniff(file, ctx)

    def read(self, fmt: str, file: SourceFile, ctx: AdapterContext) -> Iterator[tuple[int, dict[str, Any]]]:
        from . import events  # the mapping: imported once a group of this format is read (base.py)
        return events.events(file, ctx)


ADAPTER = BfclAdapter()
