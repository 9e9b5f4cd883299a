"""One agent's session trace for one subtask (docs/formats/entcollabbench.md §1-7) -> events.

The trace has no span ids; this module rebuilds them:
- an *invocation* (one run of the agent's LLM loop) starts at `request_parsed` or an
  `invoke_start` not preceded by one; its span parents every event it logs;
- a delegation's span is derived from (request_id, recursion trace, occurrence), which
  the caller's `delegate_start` and the callee's `request_parsed` share, so the callee's
  invocation nests under the delegation without joining the two logs;
- `tool_result` is paired with its `tool_call` by order within the invocation and tool
  name, since its tool_call_id is usually empty.
Delegations refused without a delegate_* event (max depth, the fork's Stage-2 block)
appear only as the `ask_<peer>_by_http` result text; they become delegation events too.
`llm_invoke_start`/`llm_invoke_done` carry nothing the views need and are not stored;
tool-role `agent_message`s repeat the `tool_result` and are not stored either.
"""

from __future__ import annotations

import re
from collections import defaultdict, deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson

from ...fields import Fields
from ...toolargs import parse_arguments
from .decisions import parse_decision
from .permissions import APPROVAL_AGENTS

Emit = Callable[..., dict[str, Any]]
Span = Callable[..., str]

MAX_TEXT_CHARS = 8_000  # message and tool-result text kept per event; the length is always kept
_MCP_SERVER = re.compile(r"^mcp[_.]([a-z0-9]+)[_.]")
_ASK = re.compile(r"^ask_(.+)_by_http$")
_DEPTH_REFUSAL = re.compile(r"Maximum recursion depth \((\d+)\)")
AI_ROLES = ("ai", "assistant", "aimessage")
USER_ROLES = ("human", "user", "humanmessage")


def text_of(content: Any) -> str:
    """Message content as text: strings as they are, content blocks joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(text_of(b.get("text", "")) if isinstance(b, dict) else text_of(b) for b in content)
    return "" if content is None else orjson.dumps(content, default=str).decode()


def clip(text: str) -> dict[str, Any]:
    return {"text": text[:MAX_TEXT_CHARS], "chars": len(text)}


def mcp_server(tool_name: str, raw_call: Any) -> str | None:
    found = _MCP_SERVER.match(tool_name)
    if not found and isinstance(raw_call, dict) and isinstance(raw_call.get("name"), str):
        found = _MCP_SERVER.match(raw_call["name"])
    return found.group(1) if found else None


@dataclass
class Invocation:
    number: int
    span: str
    parent: str
    depth: int | None = None
    started: bool = False  # invoke_start seen
    pending_calls: dict[str, deque[str]] = field(default_factory=lambda: defaultdict(deque))
    asks: list[dict[str, Any]] = field(default_factory=list)  # ask_* calls: to_agent, span, answered
    delegations: dict[str, deque[dict[str, Any]]] = field(default_factory=lambda: defaultdict(deque))
    last_ai: tuple[str, int] | None = None  # (text, number of tool calls)
    final_text: str | None = None  # last AI message without tool calls
    responses: set[str] = field(default_factory=set)  # llm_response_meta already counted


@dataclass
class SubtaskScope:
    """What every agent log of one subtask shares."""

    subtask: str
    request_id: str
    span: str  # the subtask's span: parent of top-level invocations
    emit: Emit
    make_span: Span
    delegation_starts: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    delegation_arrivals: dict[str, int] = field(default_factory=lambda: defaultdict(int))

    def delegation_span(self, trace: Any, arrivals: bool) -> str:
        key = orjson.dumps(trace).decode()
        counter = self.delegation_arrivals if arrivals else self.delegation_starts
        counter[key] += 1
        return self.make_span("delegation", self.request_id, key, counter[key])


class AgentLog:
    """Reads one agent's events in list order (authoritative within one agent)."""

    def __init__(self, scope: SubtaskScope, agent: str):
        self.scope, self.agent = scope, agent
        self.inv: Invocation | None = None
        self.count = 0

    def events(self, trace_events: list[Fields]) -> Iterator[dict[str, Any]]:
        for e in trace_events:
            name = e.req("event", "string")
            handler = getattr(self, "_on_" + name, None)
            if handler is not None:
                yield from handler(e, e.sub("data"), e.opt("ts", "number"))
        yield from self._close()

    def _event(self, kind: str, e_ts: float | None, **fields: Any) -> dict[str, Any]:
        self.count += 1
        inv = self._current()
        fields.setdefault("span_id", self.scope.make_span(self.agent, inv.number, "event", self.count))
        fields.setdefault("parent_span_id", inv.span)
        payload = {"invocation": inv.number, "request_id": self.scope.request_id, **fields.pop("payload", {})}
        return self.scope.emit(kind, agent=self.agent, subtask=self.scope.subtask, ts=e_ts, payload=payload, **fields)

    def _current(self) -> Invocation:
        """The open invocation; events before any request_parsed/invoke_start open one."""
        return self.inv or self._start(None, None)

    def _start(self, data: Fields | None, parent: str | None) -> Invocation:
        number = self.inv.number + 1 if self.inv else 1
        self.inv = Invocation(number, self.scope.make_span(self.agent, number, "invocation"), parent or self.scope.span,
                              data.opt("depth", "integer") if data else None)
        return self.inv

    def _arrival(self, d: Fields) -> str | None:
        source = d.opt("source_agent", "string")
        if source in (None, "user"):
            return None
        return self.scope.delegation_span(d.record.get("trace"), arrivals=True)

    def _on_request_parsed(self, e: Fields, d: Fields, ts: float | None) -> Iterator[dict[str, Any]]:
        yield from self._close()
        self._start(d, self._arrival(d))

    def _on_invoke_start(self, e: Fields, d: Fields, ts: float | None) -> Iterator[dict[str, Any]]:
        if self.inv is None or self.inv.started:
            yield from self._close()
            self._start(d, self._arrival(d))
        inv = self.inv
        inv.started = True
        if inv.depth is None:
            inv.depth = d.opt("depth", "integer")
        task = text_of(d.record.get("task"))
        yield self._event("message", ts, span_id=inv.span, parent_span_id=inv.parent,
                          payload={"role": "user", "from_agent": d.opt("source_agent", "string"), "depth": inv.depth,
                                   "max_depth": d.opt("max_depth", "integer"), "trace": d.record.get("trace"),
                                   **clip(task)})

    def _on_agent_message(self, e: Fields, d: Fields, ts: float | None) -> Iterator[dict[str, Any]]:
        message = d.sub("message")
        role = (d.opt("role", "string") or message.opt("type", "string") or "").lower()
        text = text_of(message.record.get("content"))
        if role in AI_ROLES:
            n_calls = len(message.opt("tool_calls", "list", []))
            inv = self._current()
            inv.last_ai = (text, n_calls)
            if n_calls == 0 and text.strip():
                inv.final_text = text
            yield self._event("message", ts, payload={"role": "assistant", "step": d.opt("step", "integer"),
                                                       "n_tool_calls": n_calls, **clip(text)})
        elif role in USER_ROLES:
            yield self._event("message", ts, payload={"role": "user", "step": d.opt("step", "integer"), **clip(text)})

    def _on_tool_call(self, e: Fields, d: Fields, ts: float | None) -> Iterator[dict[str, Any]]:
        name = d.req("tool_name", "string")
        args = parse_arguments(d.record.get("arguments"))
        server = mcp_server(name, d.record.get("raw_tool_call"))
        payload: dict[str, Any] = {"server": server, "call_id": d.opt("tool_call_id", "string"),
                                   "step": d.opt("step", "integer"), "arguments": args}
        if server is not None and isinstance(args.get("tool_name"), str):
            payload["mcp_tool"] = args["tool_name"]
            # the real MCP arguments are a JSON string inside the LangChain arguments
            payload["arguments"] = parse_arguments(args.get("arguments_json"))
            payload["database_id"] = args.get("database_id")
        event = self._event("tool_call", ts, tool_name=name, payload=payload)
        inv = self.inv
        inv.pending_calls[name].append(event["span_id"])
        if ask := _ASK.match(name):
            inv.asks.append({"to_agent": ask.group(1), "span": event["span_id"], "answered": False})
        yield event

    def _on_tool_result(self, e: Fields, d: Fields, ts: float | None) -> Iterator[dict[str, Any]]:
        name = d.opt("tool_name", "string") or ""
        inv = self._current()
        call_span = inv.pending_calls[name].popleft() if inv.pending_calls[name] else None
        result = text_of(d.record.get("result"))
        status = "error" if result.lstrip().lower().startswith("error") else "ok"
        refusal = "unseeded_server" if "was not seeded for this benchmark session" in result else None
        yield self._event("tool_result", ts, tool_name=name, parent_span_id=call_span or inv.span,
                          payload={"status": status, "refusal": refusal, "step": d.opt("step", "integer"),
                                   "paired": call_span is not None, **clip(result)})
        if ask := _ASK.match(name):
            yield from self._refused_delegation(ask.group(1), call_span, result, ts)

    def _refused_delegation(self, to_agent: str, call_span: str | None, result: str, ts: float | None) -> Iterator[dict[str, Any]]:
        """An ask_* call answered without any delegate_* event was refused before leaving the agent."""
        ask = next((a for a in self.inv.asks if a["span"] == call_span), None)
        if ask is None or ask["answered"]:
            return
        ask["answered"] = True
        if not result.lstrip().lower().startswith("error"):
            return
        depth_cap = _DEPTH_REFUSAL.search(result)
        depth = self.inv.depth + 1 if self.inv.depth is not None else None
        yield self._event("delegation", ts, parent_span_id=call_span,
                          payload={"to_agent": to_agent, "depth": depth,
                                   "max_depth": int(depth_cap.group(1)) if depth_cap else None,
                                   "status": "refused_depth" if depth_cap else "refused", "error": result[:500]})

    def _answer_ask(self, to_agent: str) -> str:
        ask = next((a for a in self.inv.asks if a["to_agent"] == to_agent and not a["answered"]), None)
        if ask is None:
            return self.inv.span
        ask["answered"] = True
        return ask["span"]

    def _on_delegate_start(self, e: Fields, d: Fields, ts: float | None) -> Iterator[dict[str, Any]]:
        inv = self._current()
        to_agent = d.req("to_agent", "string")
        inv.delegations[to_agent].append({
            "span": self.scope.delegation_span(d.record.get("trace"), arrivals=False), "parent": self._answer_ask(to_agent),
            "ts": ts, "payload": {"to_agent": to_agent, "depth": d.opt("depth", "integer"),
                                  "max_depth": d.opt("max_depth", "integer"), "trace": d.record.get("trace"),
                                  "message": text_of(d.record.get("task"))[:MAX_TEXT_CHARS]}})
        return iter(())

    def _finish_delegation(self, to_agent: str, status: str, ts: float | None, **extra: Any) -> Iterator[dict[str, Any]]:
        inv = self._current()
        queue = inv.delegations[to_agent]
        start = queue.popleft() if queue else {"span": None, "parent": None, "ts": ts, "payload": {"to_agent": to_agent}}
        latency = ts - start["ts"] if ts is not None and start["ts"] is not None and ts >= start["ts"] else None
        fields = {"span_id": start["span"]} if start["span"] else {}
        yield self._event("delegation", start["ts"], parent_span_id=start["parent"] or inv.span,
                          latency_s=latency, payload={**start["payload"], "status": status, **extra}, **fields)

    def _on_delegate_done(self, e: Fields, d: Fields, ts: float | None) -> Iterator[dict[str, Any]]:
        yield from self._finish_delegation(d.req("to_agent", "string"), "ok", ts, handled_by=d.opt("handled_by", "string"),
                                           result_preview=text_of(d.record.get("result_preview"))[:MAX_TEXT_CHARS])

    def _on_delegate_non_ok(self, e: Fields, d: Fields, ts: float | None) -> Iterator[dict[str, Any]]:
        yield from self._finish_delegation(d.req("to_agent", "string"), "non_ok", ts,
                                           peer_status=d.opt("status", "string"), error=text_of(d.record.get("error")))

    def _on_delegate_error(self, e: Fields, d: Fields, ts: float | None) -> Iterator[dict[str, Any]]:
        yield from self._finish_delegation(d.req("to_agent", "string"), "error", ts, error=text_of(d.record.get("error")))

    def _on_delegate_blocked_cycle(self, e: Fields, d: Fields, ts: float | None) -> Iterator[dict[str, Any]]:
        inv = self._current()
        to_agent = d.req("to_agent", "string")
        depth = inv.depth + 1 if inv.depth is not None else None
        yield self._event("delegation", ts, parent_span_id=self._answer_ask(to_agent),
                          payload={"to_agent": to_agent, "depth": depth, "trace": d.record.get("trace"),
                                   "status": "blocked_cycle", "error": d.opt("reason", "string")})

    def _on_llm_response_meta(self, e: Fields, d: Fields, ts: float | None) -> Iterator[dict[str, Any]]:
        inv = self._current()
        # When summarization fires, earlier messages can be streamed again within one
        # invocation, repeating their llm_response_meta: count each response once.
        same = {k: d.record.get(k) for k in ("step", "model_name", "usage_metadata", "response_metadata")}
        fingerprint = orjson.dumps(same, option=orjson.OPT_SORT_KEYS, default=str).decode()
        if fingerprint in inv.responses:
            return
        inv.responses.add(fingerprint)
        usage = d.sub("usage_metadata")
        fallback = d.sub("response_metadata").sub("token_usage")
        prompt = usage.opt("input_tokens", "integer")
        completion = usage.opt("output_tokens", "integer")
        if prompt is None and completion is None:  # the driver's fallback: the provider's token_usage
            prompt, completion = fallback.opt("prompt_tokens", "integer"), fallback.opt("completion_tokens", "integer")
        text, n_calls = inv.last_ai or ("", 0)
        yield self._event("llm_call", ts, model=d.opt("model_name", "string"), prompt_tokens=prompt,
                          completion_tokens=completion,
                          reasoning_tokens=usage.sub("output_token_details").opt("reasoning", "integer"),
                          cached_tokens=usage.sub("input_token_details").opt("cache_read", "integer"),
                          finish_reason=d.opt("finish_reason", "string"),
                          payload={"step": d.opt("step", "integer"), "n_tool_calls": n_calls,
                                   "elapsed_ms_from_request_start": d.opt("elapsed_ms_from_request_start", "number"),
                                   "content": text[:MAX_TEXT_CHARS], "content_chars": len(text)})

    def _on_request_cancelled(self, e: Fields, d: Fields, ts: float | None) -> Iterator[dict[str, Any]]:
        yield self._event("error", ts, payload={"type": "request_cancelled", "message": d.opt("reason", "string")})

    def _close(self) -> Iterator[dict[str, Any]]:
        """End of an invocation: delegations that never got an answer; an approval agent's decision."""
        inv = self.inv
        if inv is None:
            return
        for to_agent, queue in list(inv.delegations.items()):
            while queue:
                yield from self._finish_delegation(to_agent, "no_outcome", None)
        if self.agent in APPROVAL_AGENTS and inv.final_text and (decision := parse_decision(inv.final_text)):
            yield self._event("decision", None, payload=decision)
