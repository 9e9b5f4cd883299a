"""Inspect AI eval logs, `.eval` (a zip) and `.json` (docs/formats/inspect.md).

One log is one eval: one task run against one model, all its samples and epochs, and becomes
one run (`inspect:<eval_id>`). Files are recognised by content, alone, in folders and in zips
(an `.eval` inside a zip too). records.py finds the logs and streams their samples
(evalzip.py reads the zip, jsonlog.py the JSON); events.py turns a log's header into run
attributes and its reported metrics into run-level scores; sample.py and transcript.py turn
each sample into LLM calls, tool calls, delegations, state diffs, scores and errors
(content.py undoes Inspect's condensing, scores.py maps score values); ids.py, below all
three, gives every event its ids and seq. The mapping is §11.
"""

from __future__ import annotations

from collections.abc import Iterator

from ...context import AdapterContext
from ...sources import SourceFile
from ..base import Group, Located
from . import records


class InspectAdapter:
    name = "inspect"
    description = "Inspect AI eval logs (.eval zip or .json: header, samples, events)"

    def sniff(self, file: SourceFile, ctx: AdapterContext) -> str | None:
        return records.sniff(file, ctx)

    def groups(self, files: list[SourceFile], ctx: AdapterContext) -> list[Group]:
        return records.groups(files, ctx)

    def events(self, group: Group, ctx: AdapterContext) -> Iterator[Located]:
        from . import events  # the mapping: imported once a group of this format is read (base.py)
        return events.events(group, ctx)


ADAPTER = InspectAdapter()
