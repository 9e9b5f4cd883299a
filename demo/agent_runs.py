"""Generated runs of a tool-using agent that delegates, in the native event format.

Seeded and deterministic: the same arguments write byte-identical archives, so
running the demo twice ingests nothing new. Each run is one model x condition; each
task has a few LLM calls with tool calls, sometimes one delegation to a peer model
(whose calls are children of the delegation span), and a final score.
"""

from __future__ import annotations

import random
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from ..schema.native import dumps_event, header

BENCHMARK = "agentdemo"
TOOLS = ("web_search", "read_file", "run_python", "calculator")
START = datetime(2026, 3, 2, 9, 0, tzinfo=timezone.utc)


@dataclass(frozen=True)
class DemoModel:
    name: str
    provider: str
    usd_per_mtok_in: float
    usd_per_mtok_out: float
    skill: float  # chance a task is solved
    speed: float  # output tokens per second


MODELS = (
    DemoModel("gpt-5.4", "openai", 2.50, 15.00, 0.78, 90.0),
    DemoModel("claude-sonnet-4.6", "anthropic", 3.00, 15.00, 0.74, 70.0),
    DemoModel("gemini-3-flash", "google", 0.50, 3.00, 0.61, 160.0),
)
CONDITIONS = ("blind", "profiles")


class _Run:
    """Builds the events of one run in order, keeping seq, clock and span ids."""

    def __init__(self, rng: random.Random, run_id: str, model: DemoModel, condition: str):
        self.rng, self.run_id, self.model, self.condition = rng, run_id, model, condition
        self.seq = 0
        self.clock = START + timedelta(hours=rng.randrange(0, 48))

    def hex(self, n: int) -> str:
        return "%0*x" % (n, self.rng.getrandbits(4 * n))

    def event(self, kind: str, **fields: Any) -> dict[str, Any]:
        self.seq += 1
        return {"run_id": self.run_id, "benchmark": BENCHMARK, "kind": kind, "seq": self.seq,
                "ts": self.clock, **fields}

    def llm_call(self, model: DemoModel, task: dict[str, Any], parent: str | None, tools: list[str]) -> dict[str, Any]:
        prompt = self.rng.randint(1_500, 12_000)
        completion = self.rng.randint(80, 1_400)
        cached = self.rng.choice((0, 0, prompt // 2))
        latency = round(0.4 + completion / model.speed * self.rng.uniform(0.8, 1.4), 3)
        self.clock += timedelta(seconds=latency)
        cost = (prompt * model.usd_per_mtok_in + completion * model.usd_per_mtok_out) / 1e6
        return self.event(
            "llm_call", **task, model=model.name, span_id=self.hex(16), parent_span_id=parent,
            prompt_tokens=prompt, completion_tokens=completion, cached_tokens=cached,
            reasoning_tokens=self.rng.choice((0, completion // 3)), cost_usd=round(cost, 6), latency_s=latency,
            finish_reason="tool_calls" if tools else "stop",
            payload={"provider": model.provider, "tool_calls": [{"name": t} for t in tools]},
        )


def _task_events(run: _Run, n: int) -> Iterator[dict[str, Any]]:
    rng, model = run.rng, run.model
    task = {"task_id": f"task-{n:03d}", "trace_id": run.hex(32)}
    root = run.hex(16)
    yield run.event("task_started", **task, span_id=root, agent="orchestrator", model=model.name)
    for step in range(rng.randint(2, 5)):
        tools = [rng.choice(TOOLS)] if step < 4 and rng.random() < 0.8 else []
        call = run.llm_call(model, task, root, tools)
        yield call | {"agent": "orchestrator", "subtask": f"step-{step + 1}"}
        for tool in tools:
            span = run.hex(16)
            run.clock += timedelta(seconds=rng.uniform(0.05, 2.0))
            yield run.event("tool_call", **task, agent="orchestrator", model=model.name, tool_name=tool,
                            span_id=span, parent_span_id=call["span_id"],
                            payload={"arguments": {"query": f"q{rng.randrange(1000)}"}, "server": "tools"})
            yield run.event("tool_result", **task, agent="orchestrator", tool_name=tool, span_id=run.hex(16),
                            parent_span_id=span, payload={"status": "ok" if rng.random() > 0.05 else "error"})
    delegated = rng.random() < 0.55
    if delegated:
        yield from _delegation(run, task, root)
    solved = rng.random() < model.skill + (0.05 if delegated and run.condition == "profiles" else 0.0)
    yield run.event("score", **task, agent="orchestrator", model=model.name, score=1.0 if solved else 0.0,
                    span_id=run.hex(16), parent_span_id=root, payload={"metric": "task_success"})
    yield run.event("task_finished", **task, agent="orchestrator", span_id=root, payload={"status": "ok"})


def _delegation(run: _Run, task: dict[str, Any], root: str) -> Iterator[dict[str, Any]]:
    peer = run.rng.choice([m for m in MODELS if m is not run.model])
    span = run.hex(16)
    yield run.event("delegation", **task, agent="orchestrator", model=run.model.name, span_id=span,
                    parent_span_id=root,
                    payload={"to_agent": "peer", "to_model": peer.name, "depth": 1, "status": "ok",
                             "message": "Please verify the intermediate result."})
    for _ in range(run.rng.randint(1, 2)):
        yield run.llm_call(peer, task, span, []) | {"agent": "peer"}


def run_events(seed: int, model: DemoModel, condition: str, tasks: int) -> Iterator[dict[str, Any]]:
    rng = random.Random(f"{seed}/{model.name}/{condition}")
    run = _Run(rng, f"demo-{model.name}-{condition}", model, condition)
    yield run.event("run_started", model=model.name,
                    payload={"attrs": {"condition": condition, "harness": "tracewh-demo"}})
    yield run.event("run_attrs", payload={"condition": condition, "model": model.name})
    for n in range(1, tasks + 1):
        yield from _task_events(run, n)
    yield run.event("run_finished", payload={"status": "ok"})


def write_demo_runs(folder: Path, tasks: int = 40, seed: int = 7) -> list[Path]:
    """One zip per model x condition, each holding one native-format event file."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for model in MODELS:
        for condition in CONDITIONS:
            path = folder / f"agent-{model.name}-{condition}.zip"
            _write_zip(path, run_events(seed, model, condition, tasks))
            paths.append(path)
    return paths


def _write_zip(path: Path, events: Iterator[dict[str, Any]]) -> None:
    info = zipfile.ZipInfo("events.jsonl", date_time=(2026, 3, 2, 0, 0, 0))  # fixed: same bytes each time
    info.compress_type = zipfile.ZIP_DEFLATED
    with zipfile.ZipFile(path, "w") as archive, archive.open(info, "w") as out:
        out.write(header(generator="tracewh demo"))
        for event in events:
            out.write(dumps_event(event))
