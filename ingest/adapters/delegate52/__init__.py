"""DELEGATE-52 (docs/formats/delegate52.md): three JSON Lines formats, each file standing alone.

- `delegate52-relay`: relay result logs `results_{domain}_{model}.jsonl`, one line per
  interaction of a relay of edits (§1-§7; relay.py);
- `delegate52-qa`: single-edit QA logs `logs/edit_testing/*.jsonl` (§8; qa.py);
- `delegate52-dataset`: the environment dataset `delegate52.jsonl` (§9; dataset.py).
The domains' categories and element-count keys (§11) are in domains.py. sniff() gives the
format name `tracewh log` shows; events() reads a file by that name.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ...context import AdapterContext
from ...sources import SourceFile
from ..base import FileAdapter
from . import records


class Delegate52Adapter(FileAdapter):
    name = "delegate52"
    description = ("DELEGATE-52 relay result logs (results_{domain}_{model}.jsonl), single-edit QA logs "
                   "(logs/edit_testing/*.jsonl) and environment dataset (delegate52.jsonl rows with states and files)")

    def sniff(self, file: SourceFile, ctx: AdapterContext) -> str | None:
        return records.sniff(file, ctx)

    def read(self, fmt: str, file: SourceFile, ctx: AdapterContext) -> Iterator[tuple[int, dict[str, Any]]]:
        from . import events  # the mapping: imported once a group of this format is read (base.py)
        return events.events(fmt, file, ctx)


ADAPTER = Delegate52Adapter()
