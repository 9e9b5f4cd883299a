"""τ-bench (v1) episodes -> events (docs/formats/taubench.md §3, §6).

Suite `tau`; shard and model as records.py reads them. One task per (task_id, trial), task ids
prefixed with the shard (`airline-task-3`); reward is the quality. Messages become
events in array order (the format has no times, tokens or agent cost): assistant turns
`llm_call` (+ `tool_call`s), tool messages `tool_result`, user/system turns `message`.
The user simulator's cost stays in the task's payload (`user_cost_usd`), apart from the
agent's cost, which τ-bench does not record.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ....schema import event_id
from ...context import AdapterContext
from ...fields import Fields
from ...sources import SourceFile
from ...toolargs import parse_arguments
from .records import episodes, model_of, shard_of, stem

BENCHMARK = "tau"


def events(file: SourceFile, ctx: AdapterContext) -> Iterator[tuple[int, dict[str, Any]]]:
    shard = shard_of(file, ctx)
    model = model_of(file, ctx, shard)
    run_id = f"tau:{stem(file)}"
    yield 0, {"run_id": run_id, "benchmark": BENCHMARK, "kind": "run_attrs", "seq": 0,
              "payload": {"suite": "tau", "shard": shard, "model": model, "harness": "tau-bench"}}
    seq = 0
    for n, f in episodes(file, ctx):
        episode = _Episode(f, run_id, shard, model, seq)
        for event in episode.events():
            yield n, event
        seq = episode.seq


class _Episode:
    def __init__(self, f: Fields, run_id: str, shard: str, model: str, seq: int):
        self.f, self.run_id, self.model, self.seq = f, run_id, model, seq
        self.trial = f.opt("trial", "integer", 0)
        self.task_id = f"{shard}-task-{f.req('task_id', 'integer')}"
        self.trace_id = event_id(run_id, self.task_id, self.trial)

    def _event(self, kind: str, **fields: Any) -> dict[str, Any]:
        self.seq += 1
        return {"run_id": self.run_id, "benchmark": BENCHMARK, "kind": kind, "seq": self.seq,
                "task_id": self.task_id, "trace_id": self.trace_id, "subtask": f"trial-{self.trial}", **fields}

    def _span(self, *parts: object) -> str:
        return event_id(self.trace_id, *parts)[:16]

    def events(self) -> Iterator[dict[str, Any]]:
        f, root = self.f, self._span("task")
        yield self._event("task_started", span_id=root, agent="agent", model=self.model, payload={"trial": self.trial})
        prompt_chars, step = 0, 0
        for i, m in enumerate(f.each("traj")):
            role, text = m.opt("role", "string"), m.opt("content", "string")
            if role == "assistant":
                step += 1
                yield from self._assistant(m, i, step, text, prompt_chars, root)
            elif role == "tool":
                call_id = m.opt("tool_call_id", "string")
                yield self._event("tool_result", agent="agent", tool_name=m.opt("name", "string"), span_id=self._span("r", i),
                                  parent_span_id=self._span("call", call_id), payload={"call_id": call_id, "result": text})
            else:
                content = None if role == "system" else text  # the policy wiki, identical in every episode
                yield self._event("message", agent=role, span_id=self._span("m", i), parent_span_id=root,
                                  payload={"role": role, "text": content, "chars": len(text or "")})
            prompt_chars += len(text or "")
        yield from self._outcome(root)

    def _assistant(self, m: Fields, i: int, step: int, text: str | None, prompt_chars: int, root: str) -> Iterator[dict[str, Any]]:
        calls = [self._call(c) for c in m.each("tool_calls") if c.record]  # an empty call, or one no object, is passed over
        span = self._span("a", i)
        yield self._event("llm_call", agent="agent", model=self.model, span_id=span, parent_span_id=root,
                          finish_reason="tool_calls" if calls else "stop",
                          payload={"step": step, "content": text, "content_chars": len(text or ""),
                                   "prompt_chars": prompt_chars, "tool_calls": calls})
        for c in calls:
            yield self._event("tool_call", agent="agent", model=self.model, tool_name=c["name"],
                              span_id=self._span("call", c["id"]), parent_span_id=span,
                              payload={"arguments": c["arguments"], "step": step, "call_id": c["id"]})

    @staticmethod
    def _call(c: Fields) -> dict[str, Any]:
        function = c.sub("function")
        return {"id": c.opt("id", "string"), "name": function.opt("name", "string"),
                "arguments": parse_arguments(function.record.get("arguments"))}

    def _outcome(self, root: str) -> Iterator[dict[str, Any]]:
        f = self.f
        info = f.sub("info")
        reward = f.req("reward", "number")
        yield self._event("task_finished", agent="agent", model=self.model, span_id=root,
                          payload={"trial": self.trial, "source": info.opt("source", "string"),
                                   "user_cost_usd": info.opt("user_cost", "number"),
                                   "error": info.opt("error", "string"),
                                   "status": "error" if info.opt("error", "string") else "ok",
                                   "reward_basis": sorted(info.sub("reward_info").opt("info", "object", {}))})
        yield self._event("score", agent="agent", model=self.model, score=reward,
                          payload={"metric": "quality", "trial": self.trial})
