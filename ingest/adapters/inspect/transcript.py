"""One transcript (a sample's `events`, or the surviving tail of a retried attempt) -> events
(docs/formats/inspect.md §7; the mapping is §11).

Model events become `llm_call`, tool events `tool_call`, agent, handoff and subtask spans
`delegation`, store and state changes `state_diff` (each change once). Spans, sample_init,
info, logger and the other types are not events of their own: they are counted (the sample's
`task_finished` payload), and spans give every event its place in the tree.

Nesting: an event's parent span is its nearest enclosing span that is itself an event (a
delegation, or the tool call a tool span belongs to), else the sample (its `task_finished`).
A handoff is one delegation: the `agent` span Inspect opens under the handoff's tool span is
its body, not a second delegation.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import orjson

from ...fields import Fields
from ...toolargs import parse_arguments
from ...values import BadValue, parse_time
from .ids import SampleIds

DELEGATING = ("agent", "handoff", "subtask")
TOOL_SPAN_LOOKBACK = 16  # a ToolEvent comes right after its tool span's span_begin (docs §7, "tool")


@dataclass
class Span:
    id: str
    type: str | None
    name: str | None
    parent: str | None
    begin: int  # index of its span_begin
    ts: str | None
    end_ts: str | None = None
    handoff: str | None = None  # an agent span that is a handoff's body: the handoff's span id
    tool_event: int | None = None  # the ToolEvent this tool span belongs to
    subtask_event: int | None = None  # the SubtaskEvent recorded in this subtask span

    @property
    def delegates(self) -> bool:
        return self.type in DELEGATING and self.handoff is None

    @property
    def is_event(self) -> bool:
        return self.delegates or self.tool_event is not None


class Transcript:
    def __init__(self, sample: SampleIds, events: list[Fields], root: str, retry: int | None = None):
        self.sample, self.events, self.root, self.retry = sample, events, root, retry
        self.resolve = sample.content.resolve
        self.spans = self._spans()
        self.tool_spans = {s.tool_event: s for s in self.spans.values() if s.tool_event is not None}
        self.reported: dict[tuple, list[str | None]] = {}  # state change -> spans that reported it
        self.model: str | None = None  # the model under evaluation, as last called (tool calls are its)
        self.counts: Counter[str] = Counter()
        self.score_times: dict[str, str] = {}  # scorer -> time of its final ScoreEvent
        self.error_time: str | None = None

    # -- spans ---------------------------------------------------------------------

    def _spans(self) -> dict[str, Span]:
        spans: dict[str, Span] = {}
        for i, e in enumerate(self.events):
            kind = e.record.get("event")
            if kind == "span_begin" and (span_id := e.opt("id", "string")):
                spans[span_id] = Span(span_id, e.opt("type", "string"), e.opt("name", "string"),
                                      e.opt("parent_id", "string"), i, e.opt("timestamp", "string"))
            elif kind == "span_end" and (span := spans.get(e.record.get("id"))):
                span.end_ts = e.opt("timestamp", "string")
            elif kind == "tool" and (span := self._tool_span(spans, i, e.record.get("function"))):
                span.tool_event = i
            elif kind == "subtask" and (span := spans.get(e.record.get("span_id"))) and span.type == "subtask":
                span.subtask_event = i
        for span in spans.values():
            tool = spans.get(span.parent)
            handoff = spans.get(tool.parent) if tool else None
            if span.type == "agent" and tool and tool.type == "tool" and handoff and handoff.type == "handoff":
                span.handoff = handoff.id
        return spans

    def _tool_span(self, spans: dict[str, Span], i: int, function: Any) -> Span | None:
        for j in range(i - 1, max(i - TOOL_SPAN_LOOKBACK, 0) - 1, -1):
            e = self.events[j].record
            if e.get("event") == "span_begin" and e.get("type") == "tool" and e.get("name") == function:
                span = spans.get(e.get("id"))
                return span if span is not None and span.tool_event is None else None
        return None

    def _ancestors(self, span_id: str | None) -> Iterator[Span]:
        """The span and its enclosing spans, innermost first (a parent cycle ends the walk)."""
        span, seen = self.spans.get(span_id), set()
        while span is not None and span.id not in seen:
            seen.add(span.id)
            yield span
            span = self.spans.get(span.parent)

    def span_id(self, *parts: object) -> str:
        return self.sample.span(*self._key(*parts))

    def anchor(self, span_id: str | None) -> str:
        """The tracewh span of the nearest enclosing span that is an event, else the sample's."""
        for span in self._ancestors(span_id):
            if span.handoff is not None:
                return self.span_id("span", span.handoff)
            if span.is_event:
                return self.span_id("span", span.id)
        return self.root

    def agent_of(self, span_id: str | None) -> str | None:
        """The innermost agent's name, else the solver's: who acts in this span."""
        spans = list(self._ancestors(span_id))
        for types in (("agent",), ("solver",)):
            found = next((s for s in spans if s.type in types), None)
            if found is not None:
                return found.name
        return None

    def _depth(self, span_id: str | None) -> int:
        return sum(1 for s in self._ancestors(span_id) if s.delegates)

    # -- events --------------------------------------------------------------------

    def _key(self, *parts: object) -> tuple:
        return parts if self.retry is None else ("retry", self.retry, *parts)

    def _emit(self, kind: str, i: int, *extra: object, payload: dict[str, Any], **fields: Any) -> dict[str, Any]:
        if self.retry is not None:
            payload = {"retry": self.retry, **payload}
        return self.sample.emit(kind, self._key("e", i, *extra), payload=payload, **fields)

    def convert(self) -> Iterator[dict[str, Any]]:
        tied_subtasks = {s.subtask_event for s in self.spans.values()}
        for i, e in enumerate(self.events):
            kind = e.record.get("event")
            self.counts[str(kind)] += 1
            if kind == "span_begin":
                yield from self._span_delegation(i, e)
            elif kind == "model":
                yield self._llm_call(i, e)
            elif kind == "tool":
                yield self._tool_call(i, e)
            elif kind == "subtask" and i not in tied_subtasks:
                yield self._loose_subtask(i, e)
            elif kind in ("store", "state"):
                yield from self._state_diffs(i, e, kind)
            elif kind == "score" and not e.record.get("intermediate"):
                self.score_times[str(e.record.get("scorer"))] = e.opt("timestamp", "string")
            elif kind == "error":
                self.error_time = e.opt("timestamp", "string")

    def _llm_call(self, i: int, e: Fields) -> dict[str, Any]:
        out = e.sub("output")
        usage = out.sub("usage")
        fresh, read, write = (usage.opt(k, "integer") for k in ("input_tokens", "input_tokens_cache_read",
                                                                 "input_tokens_cache_write"))
        # Inspect's input_tokens leave cache reads and writes out; tracewh's prompt_tokens are all input
        prompt = None if fresh is None and read is None and write is None else (fresh or 0) + (read or 0) + (write or 0)
        completion = usage.opt("output_tokens", "integer")
        model, role, error = e.opt("model", "string"), e.opt("role", "string"), e.opt("error", "string")
        if role is None:
            self.model = model
        choices = out.each("choices")
        cost = usage.opt("total_cost", "number")
        span = e.opt("span_id", "string")
        return self._emit(
            "llm_call", i, ts=e.opt("timestamp", "string"), agent=self.agent_of(span) or role, model=model,
            span_id=self.span_id("e", i), parent_span_id=self.anchor(span),
            prompt_tokens=prompt, completion_tokens=completion, cached_tokens=read,
            reasoning_tokens=usage.opt("reasoning_tokens", "integer"),
            cost_usd=cost if cost is not None else self.sample.prices.cost(model, prompt, completion, read),
            latency_s=self._latency(e, out.opt("time", "number")),
            finish_reason=(choices[0].opt("stop_reason", "string") if choices else None) or ("error" if error else None),
            payload=self._call_payload(e, out, choices[0].sub("message") if choices else None))

    def _call_payload(self, e: Fields, out: Fields, message: Fields | None) -> dict[str, Any]:
        """What a captured call holds: the messages sent, the reply, its tool calls, the request's settings."""
        model = e.opt("model", "string")
        return {"provider": model.split("/", 1)[0] if model and "/" in model else None, "role": e.opt("role", "string"),
                "messages": self.sample.content.model_input(e.record),
                "tools_offered": [t.get("name") for t in e.opt("tools", "list", []) if isinstance(t, dict)],
                "tool_choice": e.record.get("tool_choice"), "params": e.opt("config", "object"),
                "content": self.resolve(out.opt("completion", "string")),
                "reasoning": _reasoning(message) if message else None,
                "tool_calls": [{"id": c.opt("id", "string"), "name": c.opt("function", "string"),
                                "arguments": parse_arguments(self.resolve(c.record.get("arguments")))}
                               for c in (message.each("tool_calls") if message else [])],
                "usage": out.sub("usage").record or None, "output_model": out.opt("model", "string"),
                "cache": e.opt("cache", "string"), "retries": e.opt("retries", "integer"),
                "error": e.opt("error", "string")}

    def _tool_call(self, i: int, e: Fields) -> dict[str, Any]:
        own = self.tool_spans.get(i)
        caller = e.opt("span_id", "string")
        error, failed = e.opt("error", "object"), e.opt("failed", "boolean")
        return self._emit(
            "tool_call", i, ts=e.opt("timestamp", "string"), agent=self.agent_of(caller), model=self.model,
            tool_name=e.req("function", "string"),
            span_id=self.span_id("span", own.id) if own else self.span_id("e", i),
            parent_span_id=self.anchor(own.parent if own else caller), latency_s=self._latency(e),
            payload={"call_id": e.opt("id", "string"),
                     "arguments": parse_arguments(self.resolve(e.record.get("arguments"))),
                     "result": self.resolve(e.record.get("result")), "error": self.resolve(error),
                     "failed": failed, "status": "error" if error or failed else "ok",
                     "to_agent": e.opt("agent", "string"), "truncated": e.record.get("truncated")})

    def _span_delegation(self, i: int, e: Fields) -> Iterator[dict[str, Any]]:
        span = self.spans.get(e.record.get("id"))
        if span is None or span.begin != i or not span.delegates:
            return
        sub = self.events[span.subtask_event] if span.subtask_event is not None else None
        yield self._delegation(i, sub, ts=span.ts, to_agent=(sub.opt("name", "string") if sub else None) or span.name,
                               span_type=span.type, span_id=self.span_id("span", span.id), parent=span.parent,
                               depth=self._depth(span.id), latency=_seconds(span.ts, span.end_ts),
                               status="ok" if span.end_ts else None)

    def _loose_subtask(self, i: int, e: Fields) -> dict[str, Any]:
        """A SubtaskEvent outside a subtask span of its own (logs from before spans)."""
        caller = e.opt("span_id", "string")
        return self._delegation(i, e, ts=e.opt("timestamp", "string"), to_agent=e.opt("name", "string"),
                                span_type="subtask", span_id=self.span_id("e", i), parent=caller,
                                depth=self._depth(caller) + 1, latency=self._latency(e), status="ok")

    def _delegation(self, i: int, sub: Fields | None, *, ts: str | None, to_agent: str | None, span_type: str | None,
                    span_id: str, parent: str | None, depth: int, latency: float | None,
                    status: str | None) -> dict[str, Any]:
        return self._emit(
            "delegation", i, ts=ts, agent=self.agent_of(parent), model=self.model, span_id=span_id,
            parent_span_id=self.anchor(parent), latency_s=latency,
            payload={"to_agent": to_agent, "depth": depth, "status": status, "span_type": span_type,
                     "message": self.resolve(sub.record.get("input")) if sub else None,
                     "result": self.resolve(sub.record.get("result")) if sub else None})

    def _state_diffs(self, i: int, e: Fields, kind: str) -> Iterator[dict[str, Any]]:
        span = e.opt("span_id", "string")
        for j, change in enumerate(e.each("changes")):
            op, path = change.req("op", "string"), change.opt("path", "string", "")
            table = "store" if kind == "store" or path == "/store" or path.startswith("/store/") else "state"
            if kind == "state" and table == "store":
                path = path[len("/store"):]
            value = self.resolve(change.record.get("value"))
            if not self._first_report((table, path, op == "remove", change.record.get("from"), _dump(value)), span):
                continue
            yield self._emit(
                "state_diff", i, j, ts=e.opt("timestamp", "string"), agent=self.agent_of(span),
                span_id=self.span_id("e", i, j), parent_span_id=self.anchor(span),
                payload={"service": "inspect", "table": table, "key": path, "field": _first_segment(path),
                         "op": JSON_PATCH_OPS.get(op, op), "json_patch_op": op, "from": change.opt("from", "string"),
                         "before": self.resolve(change.record.get("replaced")), "after": value})

    def _first_report(self, change: tuple, span: str | None) -> bool:
        """Whether no span inside `span` (or `span` itself) reported this change already: Inspect
        reports a store change in its own span and again in every enclosing one, and solver
        boundaries repeat store changes in their state diff (docs §7, "store and state")."""
        reported = self.reported.setdefault(change, [])
        if any(span is None or any(s.id == span for s in self._ancestors(where)) for where in reported):
            return False
        reported.append(span)
        return True

    def _latency(self, e: Fields, fallback: float | None = None) -> float | None:
        seconds = _seconds(e.opt("timestamp", "string"), e.opt("completed", "string"))
        if seconds is None:
            seconds = e.opt("working_time", "number")
        return seconds if seconds is not None else fallback


JSON_PATCH_OPS = {"add": "insert", "remove": "delete", "replace": "update"}  # move, copy, test kept as they are


def _seconds(start: str | None, end: str | None) -> float | None:
    if not start or not end:
        return None
    try:
        return max((parse_time(end) - parse_time(start)).total_seconds(), 0.0)
    except BadValue:
        return None


def _first_segment(path: str) -> str | None:
    segment = path.lstrip("/").split("/", 1)[0]
    return segment.replace("~1", "/").replace("~0", "~") or None


def _dump(value: Any) -> bytes:
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS, default=str)
    except TypeError:  # an integer beyond 64 bits
        return repr(value).encode()


def _reasoning(message: Fields) -> str | None:
    content = message.record.get("content")
    if not isinstance(content, list):
        return None
    texts = [b["reasoning"] for b in content if isinstance(b, dict) and b.get("type") == "reasoning"
             and isinstance(b.get("reasoning"), str)]
    return "\n".join(texts) or None
