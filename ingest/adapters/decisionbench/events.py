"""One DecisionBench run's files -> events (docs/formats/decisionbench.md §3-§6).

The manifest becomes `run_attrs` (suite, shard, split, condition, orchestrator, ...), a
`registry` event with the model pool and a `run_finished`; each record a `task_finished`
(cost, latency, steps, error) and a `score` (quality); each trace line, in order, an
`llm_call` (orchestrator completions, and peer completions as children of their
delegation's span), a `tool_call` per requested tool (`read_profile` included), a
`delegation` per `call_model`, and a `tool_result`; each profile card a `registry` event.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Iterator
from typing import Any

from ....errors import BadInputError
from ....schema import event_id
from ...bulk import Irregular
from ...context import AdapterContext
from ...fields import Fields
from ...jsonlines import no_progress
from ...sources import SourceFile
from ...toolargs import parse_arguments
from ..base import EventBatch, Group, Located
from . import columns
from .records import BENCHMARK, DELEGATE_TOOL, VERSION, RunFiles, manifest, profile_card, rows, trace_task


def events(group: Group, ctx: AdapterContext) -> Iterator[Located | EventBatch]:
    run: RunFiles = group.detail
    reader = _RunReader(run, ctx)
    yield from reader.manifest_events()
    for chunk in columns.chunks([*([run.records] if run.records else []), *run.traces]):
        yield from _chunk_events(reader, chunk)
    for card in run.profiles:
        yield card, 1, reader.profile_event(card)


def _chunk_events(reader: _RunReader, files: list[SourceFile]) -> Iterator[Located | EventBatch]:
    """Records and traces as columns (columns.py); record by record where those decline them."""
    start = reader.seq
    try:
        batch = columns.ChunkReader(reader).read(files)
    except (Irregular, BadInputError):  # read again, record by record: the first error in reading order
        reader.seq = start
        for file in files:
            yield from reader.file_events(file)
        return
    if batch.num_rows:
        yield EventBatch(files[0], batch, lambda: _again(reader, start, files))


def _again(reader: _RunReader, start: int, files: list[SourceFile]) -> Iterator[Located]:
    """The chunk's events once more, record by record (their bytes were reported already)."""
    again = copy.copy(reader)
    again.seq, again.ctx = start, dataclasses.replace(reader.ctx, progress=no_progress)
    for file in files:
        yield from again.file_events(file)


class _RunReader:
    """Turns one run's files into events, numbering them in reading order."""

    def __init__(self, run: RunFiles, ctx: AdapterContext):
        self.run, self.ctx, self.seq = run, ctx, 0
        self.m = manifest(run)
        self.run_id = self.m.req("run_id", "string")
        self.orchestrator = self.m.req("orchestrator", "string")
        # Ids (hashes) several events ask for: a task's trace and span, a tool call's span (its
        # call, delegation, result and peer completions). Kept for the run this reader reads.
        self._spans: dict[tuple[object, ...], str] = {}
        self._traces: dict[str, str] = {}

    def _event(self, kind: str, **fields: Any) -> dict[str, Any]:
        self.seq += 1
        return {"run_id": self.run_id, "benchmark": BENCHMARK, "kind": kind, "seq": self.seq, **fields}

    def span(self, task_id: str, *parts: object) -> str:
        key = (task_id, *parts)
        span = self._spans.get(key)
        if span is None:
            span = self._spans[key] = event_id(self.run_id, *key)[:16]
        return span

    def trace_id(self, task_id: str) -> str:
        trace = self._traces.get(task_id)
        if trace is None:
            trace = self._traces[task_id] = event_id(self.run_id, task_id)
        return trace

    def _task(self, task_id: str) -> dict[str, Any]:
        return {"task_id": task_id, "trace_id": self.trace_id(task_id)}

    def file_events(self, file: SourceFile) -> Iterator[Located]:
        """The events of records.jsonl or of a trace, record by record."""
        if file is self.run.records:
            for r in rows(file, self.ctx):
                yield from ((file, r.line, e) for e in self.record_events(r))
        else:
            task_id = trace_task(self.run, file)
            for t in rows(file, self.ctx):
                yield from ((file, t.line, e) for e in self.trace_events(task_id, t))

    def manifest_events(self) -> Iterator[Located]:
        m = self.m
        attrs = {"suite": m.req("suite", "string"), "shard": m.opt("shard", "string"), "split": m.opt("split", "string"),
                 "condition": m.opt("condition", "string"), "model": self.orchestrator,
                 "tagger_version": m.opt("tagger_version", "string"),
                 "delegation_cap": m.opt("delegation_cap", "integer"), "format": VERSION}
        yield self.run.manifest, 1, self._event("run_attrs", ts=m.opt("started_at", "string"), payload=attrs)
        pool = [{"model": p.req("model", "string"), "vendor": p.req("vendor", "string"), "tier": p.opt("tier", "string")}
                for p in m.each("pool")]
        yield self.run.manifest, 1, self._event("registry", payload={"name": "model_pool", "entries": pool})
        yield self.run.manifest, 1, self._event("run_finished", ts=m.opt("finished_at", "string"), model=self.orchestrator)

    def record_events(self, r: Fields) -> Iterator[dict[str, Any]]:
        task = self._task(r.req("task_id", "string"))
        quality = r.req("quality", "number")
        if not 0 <= quality <= 1:
            raise r.error("quality", f"expected a quality in [0, 1], got {quality}")
        yield self._event("task_finished", **task, model=self.orchestrator, agent="orchestrator",
                          cost_usd=r.opt("cost_usd", "number"), latency_s=r.opt("latency_s", "number"),
                          payload={"n_steps": r.opt("n_steps", "integer"), "error": r.opt("error", "string"),
                                   "status": "error" if r.opt("error", "string") else "ok"})
        yield self._event("score", **task, model=self.orchestrator, agent="orchestrator", score=quality,
                          payload={"metric": "quality"})

    def trace_events(self, task_id: str, t: Fields) -> Iterator[dict[str, Any]]:
        kind = t.req("type", "string")
        if kind == "completion":
            yield from self._completion(task_id, t)
        elif kind == "tool_result":
            yield self._tool_result(task_id, t)
        elif kind == "peer_completion":
            yield self._llm_call(task_id, t, agent="peer", parent=self.span(task_id, "call", t.req("parent_tool_call_id", "string")))
        else:
            raise t.error("type", f"expected completion, tool_result or peer_completion, got {kind!r}")

    def _llm_call(self, task_id: str, t: Fields, agent: str, parent: str, **extra: Any) -> dict[str, Any]:
        usage = t.sub("usage")
        model = t.opt("model", "string") or self.orchestrator
        prompt, completion = usage.opt("prompt_tokens", "integer"), usage.opt("completion_tokens", "integer")
        cached = usage.opt("cached_tokens", "integer")
        cost = t.opt("cost_usd", "number")
        if cost is None:
            cost = self.ctx.prices.cost(model, prompt, completion, cached)
        content = t.opt("content", "string")
        payload = {"content": content, "content_chars": len(content or ""), **extra.pop("payload", {})}
        return self._event("llm_call", **self._task(task_id), agent=agent, model=model, ts=t.opt("ts", "string"),
                           span_id=event_id(self.run_id, task_id, "line", t.line)[:16], parent_span_id=parent,
                           prompt_tokens=prompt, completion_tokens=completion,
                           reasoning_tokens=usage.opt("reasoning_tokens", "integer"), cached_tokens=cached,
                           finish_reason=t.opt("finish_reason", "string"), latency_s=t.opt("latency_s", "number"),
                           cost_usd=cost, payload=payload, **extra)

    def _completion(self, task_id: str, t: Fields) -> Iterator[dict[str, Any]]:
        step = t.req("step", "integer")
        calls = []
        for i, c in enumerate(t.each("tool_calls")):
            calls.append({"id": c.opt("id", "string") or f"line{t.line}-{i}", "name": c.req("name", "string"),
                          "arguments": parse_arguments(c.record.get("arguments"))})
        call = self._llm_call(task_id, t, agent="orchestrator", parent=self.span(task_id, "task"),
                              subtask=f"step-{step}", payload={"step": step, "tool_calls": calls})
        yield call
        for c in calls:
            span = self.span(task_id, "call", c["id"])
            common = {**self._task(task_id), "agent": "orchestrator", "model": self.orchestrator,
                      "subtask": f"step-{step}", "ts": call["ts"], "span_id": span, "parent_span_id": call["span_id"]}
            if c["name"] == DELEGATE_TOOL:
                args = c["arguments"]
                yield self._event("delegation", **common, tool_name=DELEGATE_TOOL,
                                  payload={"to_model": args.get("model"), "message": args.get("subtask"),
                                           "budget_usd": args.get("budget_usd"), "depth": 1, "step": step,
                                           "call_id": c["id"]})
            else:
                yield self._event("tool_call", **common, tool_name=c["name"],
                                  payload={"arguments": c["arguments"], "step": step, "call_id": c["id"]})

    def _tool_result(self, task_id: str, t: Fields) -> dict[str, Any]:
        call_id = t.req("tool_call_id", "string")
        error = t.opt("error", "string")
        return self._event("tool_result", **self._task(task_id), agent="orchestrator", tool_name=t.opt("name", "string"),
                           span_id=self.span(task_id, "result", call_id), parent_span_id=self.span(task_id, "call", call_id),
                           latency_s=t.opt("latency_s", "number"),
                           payload={"call_id": call_id, "step": t.opt("step", "integer"), "status": "error" if error else "ok",
                                    "error": error, "result": t.opt("content", "string")})

    def profile_event(self, card: SourceFile) -> dict[str, Any]:
        model, text = profile_card(card, self.ctx)
        return self._event("registry", model=model, payload={"name": "profile_card", "model": model, "text": text})
