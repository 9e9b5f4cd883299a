"""EntCollabBench run archives (docs/formats/entcollabbench.md): result JSONL, trajectory JSONL,
task files and permission config -> events.

Result rows (§11) give `task_finished` (pass, subset, multi, token totals), a `score` per task
and per subtask (metric task_pass / subtask_pass) and a `judgment` per judged (agent,
subtask) with its votes. Trajectory rows (§12) give `task_started`/`task_finished` per task
and subtask, every agent's trace (messages, LLM calls, tool calls and results, delegations
with rebuilt parent links, refusals, approval decisions; §1-§7, trace.py and decisions.py)
and `state_diff` events (one per changed row, and per changed field of an updated row; §9,
state.py). Permission config (§16, permissions.py) and task files (§10, tasks.py) become
`registry` events (ecb_permissions, ecb_task_spec). A run spreads over several files:
records.py finds and pairs them, events.py reads them.
"""

from __future__ import annotations

from collections.abc import Iterator

from ...context import AdapterContext
from ...sources import SourceFile
from ..base import Group, Located
from . import records


class EntCollabBenchAdapter:
    name = "entcollabbench"
    description = "EntCollabBench run (result[-X].jsonl, traj/traj[-X].jsonl, task files, agent_specs.json)"

    def sniff(self, file: SourceFile, ctx: AdapterContext) -> str | None:
        return records.sniff(file, ctx)

    def groups(self, files: list[SourceFile], ctx: AdapterContext) -> list[Group]:
        return records.groups(files, ctx)

    def events(self, group: Group, ctx: AdapterContext) -> Iterator[Located]:
        from . import events  # the mapping: imported once a group of this format is read (base.py)
        return events.events(group, ctx)


ADAPTER = EntCollabBenchAdapter()
