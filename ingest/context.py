"""What an adapter may know about the batch it is reading for."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .jsonlines import Progress, first_record, no_progress
from .prices import PriceRegistry
from .sources import Limits, SourceFile


@dataclass
class AdapterContext:
    limits: Limits = field(default_factory=Limits)
    attrs: dict[str, str] = field(default_factory=dict)  # from `ingest --attr key=value`
    progress: Progress = no_progress  # stored bytes consumed
    prices: PriceRegistry = field(default_factory=PriceRegistry)  # cost where a log has none
    check: bool = True  # run the data-quality gate before commit
    quarantine: bool = False  # hold failing events instead of refusing the batch
    threads: int | None = None  # DuckDB threads an adapter's own queries may use (None: every core)
    _firsts: dict[str, dict[str, Any] | None] = field(default_factory=dict, repr=False)

    def first(self, file: SourceFile) -> dict[str, Any] | None:
        """The file's first JSON record (None when it does not start with one), read once per
        batch however many adapters sniff it."""
        if file.display not in self._firsts:
            self._firsts[file.display] = first_record(file, self.limits.max_line_bytes)
        return self._firsts[file.display]
