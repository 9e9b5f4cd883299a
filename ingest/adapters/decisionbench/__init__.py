"""DecisionBench run archives, format `decisionbench-run/1` (docs/formats/decisionbench.md).

A layout tracewh defines: one folder or zip per run holding manifest.json (§3),
records.jsonl, one line per task outcome (§4), traces/<task_id>.jsonl, one line per step
(§5), and profiles/<model>.md, the profile cards served (§6). A run spreads over several
files, so the adapter claims groups of files: records.py finds each run's files beside its
manifest, events.py reads them in that order.
"""

from __future__ import annotations

from collections.abc import Iterator

from ...context import AdapterContext
from ...sources import SourceFile
from ..base import Group, Located
from . import records


class DecisionBenchAdapter:
    name = "decisionbench"
    description = "DecisionBench run archive (decisionbench-run/1: manifest.json, records.jsonl, traces/)"

    def sniff(self, file: SourceFile, ctx: AdapterContext) -> str | None:
        return records.sniff(file, ctx)

    def groups(self, files: list[SourceFile], ctx: AdapterContext) -> list[Group]:
        return records.groups(files, ctx)

    def events(self, group: Group, ctx: AdapterContext) -> Iterator[Located]:
        from . import events  # the mapping: imported once a group of this format is read (base.py)
        return events.events(group, ctx)


ADAPTER = DecisionBenchAdapter()
