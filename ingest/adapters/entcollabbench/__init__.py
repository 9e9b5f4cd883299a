"""EntCollabBench run archives (shared/formats/entcollabbench.md): result JSONL, trajectory JSONL,
task files and permission config -> events.

Result rows give `task_finished` (pass, subset, multi, token totals), a `score` per task
and per subtask (metric task_pass / subtask_pass) and a `judgment` per judged (agent,
subtask) with its votes. Trajectory rows give `task_started`/`task_finished` per task and
subtask, every agent's trace (messages, LLM calls, tool calls and results, delegations
with rebuilt parent links, refusals, approval decisions; see trace.py) and `state_diff`
events (one per changed row, and per changed field of an updated row). Permission config
and task files become `registry` events (ecb_permissions, ecb_task_spec).
"""

from .run import find_groups, group_events

name = "entcollabbench-run"
description = "EntCollabBench run (result[-X].jsonl, traj/traj[-X].jsonl, task files, agent_specs.json)"

__all__ = ["find_groups", "group_events", "name", "description"]
