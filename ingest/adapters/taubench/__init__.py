"""τ-bench (v1) result files (docs/formats/taubench.md): one JSON array of episodes
{task_id, reward, trial, info, traj} per (model, shard), each file standing alone.

records.py recognises a file and streams its episodes (§1-§2); events.py turns each
episode's messages (§3) into task, LLM-call, tool and score events (§6).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ...context import AdapterContext
from ...sources import SourceFile
from ..base import FileAdapter
from . import records


class TauBenchAdapter(FileAdapter):
    name = "taubench"
    description = "τ-bench result files (JSON array of {task_id, reward, trial, info, traj})"

    def sniff(self, file: SourceFile, ctx: AdapterContext) -> str | None:
        return records.sniff(file, ctx)

    def read(self, fmt: str, file: SourceFile, ctx: AdapterContext) -> Iterator[tuple[int, dict[str, Any]]]:
        from . import events  # the mapping: imported once a group of this format is read (base.py)
        return events.events(file, ctx)


ADAPTER = TauBenchAdapter()
