"""A small generated EntCollabBench sweep: 4 models x the benchmark's 4 task sets, in its real archive layout.

Each model has a hidden reliability; an agent passes its part of a subtask with a
chance that falls with its depth on the delegation chain, and a subtask passes when
every agent of its reference trajectory passes. Subtasks run in order; after a failure
the rest are skipped, as the driver does. Traces hold MCP tool calls, delegations up to
depth 3, state diffs and approval decisions, and the failure modes the paper reports:
pseudo tool calls in text, re-read loops over policy files, delegations refused at the
depth limit or as cycles, and tools outside an agent's permissions.
One zip per model: result-<set>.jsonl, traj/traj-<set>.jsonl and the task files.
"""

from __future__ import annotations

import json
import random
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from ..ingest.adapters.entcollabbench.permissions import APPROVAL_AGENTS
from .decisionbench_archive import write_zip
from .entcollabbench_archive import (T0, AgentLog, jsonl, report, result_line, skipped_subtask, subtask_result,
                                     trajectory_line, traces, verdict)

MODELS = {"deepseek-v4-pro": 0.94, "claude-sonnet-4.6": 0.91, "gpt-5.4": 0.87, "qwen3.5-35b-a3b": 0.78}
TASK_SETS = {"mcp_tasks_160": ("workflow", 1, 10), "mcp_multi_tasks_40": ("workflow", 3, 5),
             "approval_tasks_80": ("approval", 1, 8), "approval_multi_task_20": ("approval", 3, 4)}
# Workflow agent -> (MCP server, a tool that changes state, its table and key column)
DOMAIN = {"it_service_desk_l1": ("itsm", "create_incident", "incident", "number"),
          "it_change_engineer": ("itsm", "create_change_request", "change_request", "number"),
          "hr_service_specialist": ("hr", "update_employee", "employees", "employee_id"),
          "customer_support_specialist": ("csm", "update_case", "cases", "case_id"),
          "developer_engineer": ("gitea", "create_branch", "branches", "name"),
          "qa_test_engineer": ("gitea", "create_file", "files", "name"),
          "knowledge_base_specialist": ("itsm", "update_knowledge_article", "knowledge", "kb_number"),
          "collaboration_ops_specialist": ("teams", "send_channel_message", "messages", "message_id")}
RULES = ("FIN-ACCT-0005", "LEG-EVAL-0001", "LEG-RPT-0002", "PROC-ENGAGE-0001", "PROC-BGSCRN-0007")
LABELS = ("approve", "reject", "require_preapproval", "require_docs")


def task_file(rng: random.Random, subset: str, n_subtasks: int, n_tasks: int, prefix: str) -> list[dict[str, Any]]:
    tasks = []
    for t in range(1, n_tasks + 1):
        subs = []
        for s in range(1, n_subtasks + 1):
            sub: dict[str, Any] = {"sub_task_id": f"{prefix}_{t}_{s}", "user_prompt": "…"}
            if subset == "workflow":
                chain = rng.sample(sorted(DOMAIN), rng.choice((1, 1, 2, 2, 3, 4)))
                sub["beginning_agent"] = chain[0]
                sub["ground_truth"] = [{"agent": a, "mcp_server_name": DOMAIN[a][0], "action": DOMAIN[a][1]} for a in chain]
            else:
                sub["beginning_agent"] = rng.choice(("knowledge_base_specialist", "collaboration_ops_specialist"))
                sub["ground_truth_approval_results"] = {
                    a: {"decision": rng.choice(LABELS), "rule_citations": [rng.choice(RULES)]}
                    for a in rng.sample(APPROVAL_AGENTS, rng.choice((1, 1, 2)))}
            subs.append(sub)
        tasks.append({"task_id": f"{prefix}_{t}", "type": "approval" if subset == "approval" else "mcp",
                      "description": f"{subset} task {t}", "sub_task_list": subs})
    return tasks


class _Subtask:
    """Plays one subtask for one model: traces, judgments, state diff."""

    def __init__(self, rng: random.Random, model: str, reliability: float, request_id: str, t: float):
        self.rng, self.model, self.reliability, self.request_id, self.t = rng, model, reliability, request_id, t
        self.logs: dict[str, list[dict[str, Any]]] = {}
        self.passed: dict[str, bool] = {}
        self.diff_tables: dict[str, dict[str, Any]] = {}

    def _tokens(self) -> tuple[int, int]:
        return self.rng.randint(1500, 9000), self.rng.randint(40, 400)

    def _agent(self, agent: str, parent: AgentLog | None) -> AgentLog:
        if parent is None:
            return AgentLog(agent, self.request_id, [f"user->{agent}"], 0, t=self.t, model=self.model)
        return AgentLog(agent, self.request_id, parent.child_trace(agent), parent.depth + 1, source=parent.agent,
                        t=parent.t + 1, model=self.model)

    def _passes(self, depth: int) -> bool:
        return self.rng.random() < self.reliability - 0.06 * depth

    def workflow(self, chain: list[str], parent: AgentLog | None = None) -> None:
        agent, rest = chain[0], chain[1:]
        log = self._agent(agent, parent)
        ok = self.passed[agent] = self._passes(log.depth)
        server, tool, table, key = DOMAIN[agent]
        action = "call_knowledge_tool" if agent == "knowledge_base_specialist" else "call_tool"
        log.ai(calls=(log.mcp(server, tool, {key: f"{table[:3].upper()}{self.rng.randint(1000, 9999)}"}, action),),
               tokens=self._tokens())
        log.result(f"mcp_{server}_{action}", '{"success": true}' if ok else "Error: NOT_FOUND")
        if ok:
            self._change(server, table, key)
        if agent == "collaboration_ops_specialist" and self.rng.random() < 0.3:  # a tool outside its groups
            log.ai(calls=(log.mcp("hr", "get_employee", {"employee_id": "E1"}),), tokens=self._tokens())
            log.result("mcp_hr_call_tool", '{"name": "Ann"}')
        if rest:
            self._delegate(log, rest)
        elif log.depth == 3 and self.rng.random() < 0.5:  # one hop too many: refused, seen only in the tool result
            target = next(a for a in DOMAIN if a not in {h.split("->")[1] for h in log.trace})
            log.ai(calls=((f"ask_{target}_by_http", {"task_description": "double-check"}),), tokens=self._tokens())
            log.result(f"ask_{target}_by_http", "Error: Request denied. Maximum recursion depth (3) reached.")
        log.ai("DONE: finished, UNDONE: none, ERROR: none" if ok else "DONE: none, UNDONE: record not found",
               tokens=self._tokens())
        self.logs[agent] = log.done()

    def _delegate(self, log: AgentLog, rest: list[str]) -> None:
        if self.model.startswith("qwen") and self.rng.random() < 0.15:  # a pseudo tool call: nobody is asked
            log.ai(f"I'll delegate now. <minimax:tool_call> <invoke name=\"ask_{rest[0]}_by_http\">",
                   tokens=self._tokens())
            self.passed.update({a: False for a in rest})
            return
        if log.depth >= 1 and self.rng.random() < 0.2:  # asking an agent already on the chain: blocked
            back = log.trace[0].split("->")[1]
            log.ai(calls=((f"ask_{back}_by_http", {"task_description": "confirm"}),), tokens=self._tokens())
            log.blocked(back)
            log.result(f"ask_{back}_by_http", "Error: target already appears in recursion trace")
        log.ai(calls=((f"ask_{rest[0]}_by_http", {"task_description": "your part"}),), tokens=self._tokens())
        log.delegate(rest[0])
        self.workflow(rest, log)
        log.result(f"ask_{rest[0]}_by_http", "done")

    def approval(self, beginning: str, refs: dict[str, dict[str, Any]]) -> None:
        log = self._agent(beginning, None)
        for specialist, ref in refs.items():
            log.ai(calls=((f"ask_{specialist}_by_http", {"task_description": "review the submission"}),), tokens=self._tokens())
            log.delegate(specialist)
            self._specialist(log, specialist, ref)
            log.result(f"ask_{specialist}_by_http", "decision received")
        log.ai("DONE: approvals collected", tokens=self._tokens())
        self.logs[beginning] = log.done()

    def _specialist(self, parent: AgentLog, agent: str, ref: dict[str, Any]) -> None:
        log = self._agent(agent, parent)
        ok = self.passed[agent] = self._passes(0)
        loops = 6 if self.model.startswith("qwen") and self.rng.random() < 0.3 else 1  # the re-read loop
        for path in ["rulebook.md"] + ["policy_docs/material_review.md"] * loops:
            log.ai(calls=(("tool_workspace_read_file", {"file_path": path}),), tokens=self._tokens())
            log.result("tool_workspace_read_file", f"# {path}")
        label = ref["decision"] if ok else self.rng.choice([x for x in LABELS if x != ref["decision"]])
        rules = ", ".join(ref["rule_citations"])
        log.ai(f"DECISION:{label}, RATIONALE:{rules} applies to the case., ERROR:", tokens=self._tokens())
        self.logs[agent] = log.done()

    def _change(self, server: str, table: str, key: str) -> None:
        row = {key: f"{table[:3].upper()}{self.rng.randint(1000, 9999)}", "status": "open"}
        self.diff_tables.setdefault(f"{server}/{table}", {"inserted": [], "updated": [], "key_fields": [key]})
        entry = self.diff_tables[f"{server}/{table}"]
        if self.rng.random() < 0.5:
            entry["inserted"].append(row)
        else:
            entry["updated"].append({"key": row[key], "changed_fields": {"status": {"before": "open", "after": "resolved"}}})

    def canonical_diff(self) -> dict[str, Any]:
        servers: dict[str, Any] = {}
        for name, t in self.diff_tables.items():
            server, table = name.split("/")
            counts = {"inserted": len(t["inserted"]), "deleted": 0, "updated": len(t["updated"])}
            servers.setdefault(server, {"initial_status": "ok", "final_status": "ok", "tables": {}})["tables"][table] = {
                **t, "deleted": [], "counts": counts, "truncated": {k: False for k in counts}}
        return {"servers": servers, "errors": []} if servers else {}


def _stamp(day: int, n: int) -> str:
    """Task n of the day's run started n minutes after 09:00 (past midnight on big runs)."""
    return (datetime(2026, 4, day, 9) + timedelta(minutes=n)).strftime("%Y-%m-%dT%H:%M:00.000Z")


def play_run(rng: random.Random, model: str, reliability: float, tasks: list[dict[str, Any]],
             subset: str, day: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    results, trajectory = [], []
    for n, task in enumerate(tasks, start=1):
        task_id, stamp = f"task_{n}", _stamp(day, n)
        reports, entries, failed = [], [], False
        for i, sub in enumerate(task["sub_task_list"]):
            sub_id, begin = f"{task_id}_{i + 1}", sub["beginning_agent"]
            if failed:
                reports.append(report(sub_id, False, [], begin, skipped=True))
                entries.append(skipped_subtask(i, sub_id, begin))
                continue
            play = _Subtask(rng, model, reliability, f"task-{n}-{i + 1}-{day}", T0 + 86400 * day + 600 * n)
            if subset == "workflow":
                play.workflow([g["agent"] for g in sub["ground_truth"]])
            else:
                play.approval(begin, sub["ground_truth_approval_results"])
            judged = [verdict(a, ok, (ok, ok, rng.random() < 0.5)) for a, ok in play.passed.items()]
            failed = not all(play.passed.values())
            reports.append(report(sub_id, not failed, judged, begin))
            entries.append(subtask_result(i, sub_id, play.request_id, begin, traces(play.request_id, play.logs),
                                          play.canonical_diff()))
        tokens = (rng.randint(20_000, 90_000), rng.randint(1_000, 6_000))
        results.append(result_line(task_id, stamp, int(not failed), reports, tokens))
        trajectory.append(trajectory_line(task_id, stamp, entries,
                                          active_servers=sorted({"calendar", "drive", "email", "teams", "itsm", "hr", "csm", "gitea"})))
    return results, trajectory


def write_entcollabbench_demo(folder: Path, seed: int = 7) -> list[Path]:
    """One zip per model holding its four task sets; returns the zip paths."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    task_files = {name: task_file(rng, subset, n_sub, n_tasks, name.split("_")[0] + ("_multi" if n_sub > 1 else ""))
                  for name, (subset, n_sub, n_tasks) in TASK_SETS.items()}
    paths = []
    for day, (model, reliability) in enumerate(MODELS.items(), start=5):
        members: dict[str, bytes] = {}
        for name, (subset, _, _) in TASK_SETS.items():
            results, trajectory = play_run(rng, model, reliability, task_files[name], subset, day)
            members[f"result-{name}.jsonl"] = jsonl(results)
            members[f"traj/traj-{name}.jsonl"] = jsonl(trajectory)
            members[f"{name}.json"] = json.dumps(task_files[name]).encode()
        paths.append(write_zip(folder / f"entcollabbench-{model}.zip", members))
    return paths
