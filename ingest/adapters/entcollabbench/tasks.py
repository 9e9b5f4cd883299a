"""EntCollabBench task files (docs/formats/entcollabbench.md §10) -> one spec per task.

A spec says which agents each subtask's reference trajectory involves (who is judged),
the reference approval decisions, and the subset (workflow/approval) and whether the
task is multi-step. Ids are normalised as every benchmark output does: task_<first
integer of the raw id>, subtask number = last integer of the raw subtask id.
"""

from __future__ import annotations

import re
from typing import Any

from ....errors import BadInputError
from .permissions import APPROVAL_AGENTS

TASK_MARKERS = ("sub_task_list", "task_list", "ground_truth", "beginning_agent", "user_prompt")
_INT = re.compile(r"\d+")


def normalize_task_id(raw: Any) -> str:
    found = _INT.search(str(raw))
    if not found:
        return str(raw)
    number = _as_int(found.group())
    return f"task_{found.group() if number is None else number}"


def subtask_number(raw_sub_id: Any, position: int) -> int:
    """1-based subtask number: the last integer of the subtask id, else the position + 1."""
    found = _INT.findall(str(raw_sub_id)) if raw_sub_id is not None else []
    number = _as_int(found[-1]) if found else None
    return position + 1 if number is None else number


def _as_int(digits: str) -> int | None:
    """The number, or None past int()'s digit limit (sys.get_int_max_str_digits)."""
    try:
        return int(digits)
    except ValueError:
        return None


def task_list(data: Any) -> list[dict[str, Any]] | None:
    """The tasks of a task file's JSON, or None when it is not a task file."""
    if isinstance(data, dict) and isinstance(data.get("tasks"), list):
        data = data["tasks"]
    elif isinstance(data, dict):
        data = [data]
    if not isinstance(data, list) or not data or not isinstance(data[0], dict):
        return None
    return data if any(k in data[0] for k in TASK_MARKERS) else None


def _subtasks(task: dict[str, Any]) -> list[dict[str, Any]]:
    subs = task.get("sub_task_list") or task.get("task_list")
    if isinstance(subs, list):
        return [s for s in subs if isinstance(s, dict)]
    return [task]  # the legacy flat form: the task is its own single subtask


def _approval_refs(value: Any) -> dict[str, dict[str, Any]]:
    if isinstance(value, dict):
        items = list(value.items())
    elif isinstance(value, list):
        items = [(next((r.get(k) for k in ("agent_name", "agent", "target_agent", "review_agent") if r.get(k)), None), r)
                 for r in value if isinstance(r, dict)]
    else:
        return {}
    refs = {}
    for agent, ref in items:
        if agent in APPROVAL_AGENTS and ref:
            ref = ref if isinstance(ref, dict) else {"decision": ref}
            refs[agent] = {"decision": ref.get("decision"),
                           "rule_citations": _citations(ref.get("rule_citations") or ref.get("citations"))}
    return refs


def _citations(value: Any) -> list[str]:
    """Rule ids, sorted: a list of them, or one alone."""
    values = value if isinstance(value, list) else [value]
    return sorted(v for v in values if isinstance(v, str))


def task_spec(task: dict[str, Any], file: str, index: int) -> dict[str, Any]:
    raw_id = next((task[k] for k in ("task_id", "task_index", "index") if task.get(k) is not None), None)
    if raw_id is None:
        raise BadInputError(file, "a task has no task_id", field=f"[{index}].task_id")
    approval = task.get("type") == "approval"
    subtasks = []
    for position, sub in enumerate(_subtasks(task)):
        raw_sub = sub.get("sub_task_id", sub.get("sub_index"))
        refs = _approval_refs(sub.get("ground_truth_approval_results"))
        steps = sub.get("ground_truth") if isinstance(sub.get("ground_truth"), list) else []
        workflow_agents = sorted({s["agent"] for s in steps if isinstance(s, dict) and isinstance(s.get("agent"), str)})
        subtasks.append({
            "subtask_index": subtask_number(raw_sub, position),
            "sub_task_id": raw_sub,
            "beginning_agent": sub.get("beginning_agent") or sub.get("target_agent") or sub.get("begin_agent"),
            # who is judged: approval tasks judge the specialists with a reference result
            "reference_agents": sorted(refs) if approval else workflow_agents,
            "approval_refs": refs,
            "servers": sorted({s["mcp_server_name"] for s in steps
                               if isinstance(s, dict) and isinstance(s.get("mcp_server_name"), str)}),
        })
    return {"task_id": normalize_task_id(raw_id), "raw_task_id": raw_id, "type": task.get("type"),
            "subset": "approval" if approval else "workflow", "multi": len(subtasks) > 1,
            "n_subtasks": len(subtasks), "description": task.get("description"), "subtasks": subtasks}


def task_specs(data: Any, file: str) -> dict[str, dict[str, Any]]:
    specs: dict[str, dict[str, Any]] = {}
    for index, task in enumerate(task_list(data) or []):
        if not isinstance(task, dict):
            raise BadInputError(file, f"expected a task (a JSON object), got {type(task).__name__}", field=f"[{index}]")
        spec = task_spec(task, file, index)
        if spec["task_id"] in specs:
            other = specs[spec["task_id"]]["raw_task_id"]
            raise BadInputError(file, f"tasks {other!r} and {spec['raw_task_id']!r} both normalise to "
                                      f"{spec['task_id']!r}, as results name them; split them into one task set per archive",
                                field=f"[{index}].task_id")
        specs[spec["task_id"]] = spec
    return specs
