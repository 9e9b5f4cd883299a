"""Writers for EntCollabBench run files in the benchmark's real field layout
(docs/formats/entcollabbench.md §1-4, §11-12): agent trace events, result rows and
trajectory rows. The demo generator and the tests build their archives with these."""

from __future__ import annotations

import json
from typing import Any

T0 = 1775383200.0  # 2026-04-05T10:00:00Z


class AgentLog:
    """One agent's trace events for one request, written in the order agent.py logs them."""

    def __init__(self, agent: str, request_id: str, trace: list[str], depth: int, source: str = "user",
                 task: str = "do the work", t: float = T0, model: str = "m-alpha"):
        self.agent, self.request_id, self.trace, self.depth, self.t, self.model = agent, request_id, trace, depth, t, model
        self.events: list[dict[str, Any]] = []
        self.step = 0
        self.add("request_parsed", source_agent=source, target_agent=agent, depth=depth, max_depth=3, trace=trace)
        self.add("invoke_start", source_agent=source, depth=depth, max_depth=3, trace=trace, task=task)
        self.add("llm_invoke_start", mode="stream_updates")

    def add(self, event: str, **data: Any) -> AgentLog:
        self.t += 0.5
        self.events.append({"ts": self.t, "event": event, "agent_name": self.agent, "session_id": "bench-1775383200-1",
                            "request_id": self.request_id, "data": data})
        return self

    def ai(self, text: str = "", calls: tuple[tuple[str, dict[str, Any]], ...] = (), tokens: tuple[int, int] = (100, 10),
           finish: str | None = None) -> AgentLog:
        self.step += 1
        usage = {"input_tokens": tokens[0], "output_tokens": tokens[1], "total_tokens": sum(tokens)}
        tool_calls = [{"name": n, "args": a, "id": "", "type": "tool_call"} for n, a in calls]
        message = {"kind": "AIMessage", "role": None, "type": "ai", "content": text, "name": None,
                   "tool_calls": tool_calls, "usage_metadata": usage,  # the same usage again: never count it twice
                   "response_metadata": {}, "id": f"run-{self.step}"}
        self.add("agent_message", step=self.step, role="ai", message=message, content_preview=text[:200])
        for name, args in calls:
            self.add("tool_call", tool_call_id="", tool_name=name, arguments=args, raw_arguments=args,
                     raw_tool_call={"name": name, "args": args, "id": "", "type": "tool_call"}, step=self.step)
        return self.add("llm_response_meta", step=self.step, model_name=self.model,
                        finish_reason=finish or ("tool_calls" if calls else "stop"), usage_metadata=usage,
                        response_metadata={"token_usage": {"prompt_tokens": tokens[0], "completion_tokens": tokens[1]}},
                        elapsed_ms_from_request_start=1000 * self.step)

    def mcp(self, server: str, tool: str, arguments: dict[str, Any], action: str = "call_tool") -> tuple[str, dict[str, Any]]:
        return f"mcp_{server}_{action}", {"tool_name": tool, "arguments_json": json.dumps(arguments), "database_id": "db_1_x"}

    def result(self, tool_name: str, text: str) -> AgentLog:
        """A tool answer as traced: the call id is lost and arguments are null (§7)."""
        self.add("agent_message", step=self.step, role="tool",
                 message={"kind": "ToolMessage", "type": "tool", "content": text, "name": tool_name}, content_preview=text)
        return self.add("tool_result", step=self.step, tool_call_id="", tool_name=tool_name, arguments=None,
                        result=text, message={"kind": "ToolMessage", "type": "tool", "content": text})

    def child_trace(self, to: str) -> list[str]:
        return [*self.trace, f"{self.agent}->{to}"]

    def delegate(self, to: str, outcome: str = "delegate_done") -> AgentLog:
        self.add("delegate_start", from_agent=self.agent, to_agent=to, task=f"please help, {to}",
                 depth=self.depth + 1, max_depth=3, trace=self.child_trace(to))
        if outcome == "delegate_done":
            return self.add(outcome, to_agent=to, handled_by=to, status="ok",
                            recursion={"depth": self.depth + 1, "max_depth": 3, "trace": self.child_trace(to)},
                            result_preview="done")
        return self.add(outcome, to_agent=to, status="error", error="peer failed")

    def blocked(self, to: str) -> AgentLog:
        return self.add("delegate_blocked_cycle", from_agent=self.agent, to_agent=to, trace=self.trace,
                        reason="target already appears in recursion trace")

    def done(self) -> list[dict[str, Any]]:
        self.add("llm_invoke_done", mode="stream_updates", duration_ms=1234, first_update_latency_ms=100, update_count=5)
        return self.events


def traces(request_id: str, logs: dict[str, list[dict[str, Any]]], quiet: tuple[str, ...] = ()) -> dict[str, Any]:
    """all_agent_traces as the driver stores it: every agent, idle ones with no events."""
    out = {}
    for agent, events in {**logs, **{a: [] for a in quiet}}.items():
        out[agent] = {"agent_name": agent, "agent_base_url": f"http://agent-{agent}:8000", "status": "ok",
                      "trace": {"status": "ok", "session_id": "bench-1775383200-1", "request_id": request_id,
                                "agent_name": agent, "events": events, "event_count": len(events)}}
    return out


def verdict(agent: str, passed: bool, votes: tuple[bool, ...] = (True, True, True)) -> dict[str, Any]:
    return {"agent_name": agent, "passed": passed, "vote_pass_count": sum(votes), "vote_fail_count": len(votes) - sum(votes),
            "trace_event_count": 10, "mcp_servers_in_trace": ["itsm"],
            "votes": [{"model": f"judge-{i}", "passed": v, "confidence": 0.9, "reason": "ok" if v else "missed a step",
                       "matched_points": [], "missed_points": [], "error": None, "latency_ms": 900,
                       "input_tokens": 2000, "output_tokens": 100, "total_tokens": 2100} for i, v in enumerate(votes)]}


def report(sub_task_id: str, passed: bool, agents: list[dict[str, Any]], beginning: str,
           skipped: bool = False) -> dict[str, Any]:
    r: dict[str, Any] = {"sub_task_id": sub_task_id, "passed": passed, "evaluated_agent_count": len(agents),
                         "agents": agents, "task_description": {"user_prompt": "…", "beginning_agent": beginning}}
    if skipped:
        r.update(subtask_index=int(sub_task_id.rsplit("_", 1)[1]) - 1, skipped=True, skip_reason="prior subtask failed")
    return r


def result_line(task_id: str, timestamp: str, passed: int, reports: list[dict[str, Any]],
                tokens: tuple[int, int] = (1000, 100)) -> dict[str, Any]:
    agents = [a for r in reports for a in r["agents"]]
    return {
        "timestamp": timestamp, "task_id": task_id, "task_passed": passed,
        "judge": {"summary": {"subtask_count": len(reports), "subtask_pass_count": sum(r["passed"] for r in reports),
                              "agent_eval_count": len(agents), "agent_pass_count": sum(a["passed"] for a in agents),
                              "agent_pass_rate": sum(a["passed"] for a in agents) / len(agents) if agents else 0,
                              "judge_input_tokens": 0, "judge_output_tokens": 0, "judge_total_tokens": 0},
                  "task": {"task_id": task_id, "alignment_mode": "inline_subtask_and", "matched_task_id": task_id,
                           "passed": bool(passed), "subtask_count": len(reports), "subtasks": reports}},
        "runtime_summary": {"status": "ok", "task_id": task_id, "session_id": "bench-1775383200-1",
                            "subtask_count": len(reports), "error_count": 0,
                            "subtasks": [{"sub_task_id": r["sub_task_id"], "target_agent": r["task_description"]["beginning_agent"],
                                          "agent_status": "skipped" if r.get("skipped") else "ok", "request_error": None,
                                          "duration_ms": 1000} for r in reports]},
        "run_input_tokens": tokens[0], "run_output_tokens": tokens[1], "run_total_tokens": sum(tokens),
        "run_tokens_by_agent": {},
    }


def subtask_result(index: int, sub_task_id: str, request_id: str, target: str, all_traces: dict[str, Any],
                   diff: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    return {"subtask_index": index, "sub_task_id": sub_task_id, "request_id": request_id, "task": "…",
            "target_agent": target, "request_sent_at": "2026-04-05T10:00:00.000Z",
            "response_received_at": "2026-04-05T10:01:00.000Z", "duration_ms": 60000, "http_status_code": 200,
            "agent_status": "ok", "request_trace_scope": {"session_id": "bench-1775383200-1", "request_id": request_id},
            "all_agent_traces": all_traces, "subtask_canonical_diff": diff or {}, **extra}


def skipped_subtask(index: int, sub_task_id: str, target: str) -> dict[str, Any]:
    return {"subtask_index": index, "sub_task_id": sub_task_id, "target_agent": target, "agent_status": "skipped",
            "skipped_due_to_prior_failure": True, "skip_reason": "prior subtask failed", "subtask_canonical_diff": {}}


def trajectory_line(task_id: str, timestamp: str, results: list[dict[str, Any]], **batch: Any) -> dict[str, Any]:
    return {"timestamp": timestamp, "task_id": task_id, "batch_entry": {
        "task_id": task_id, "description": "…", "session_id": "bench-1775383200-1", "status": "ok",
        "seed_results": [], "task_results": results, "cleanup_results": [], "errors": [],
        "subtask_count": len(results), **batch}}


def jsonl(records: list[dict[str, Any]]) -> bytes:
    return b"".join(json.dumps(r).encode() + b"\n" for r in records)
