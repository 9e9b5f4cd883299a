"""A small generated DecisionBench sweep: 6 models of 3 vendors, 3 suites, Stage 1 and all 5 Stage-2 conditions.

Each model has a hidden ability per skill. A task exercises one skill through the tools
the step tagger recognises; in Stage 2 the orchestrator may delegate through call_model
(aware conditions pick good peers more often; aware-tool-only first calls read_profile),
and the task succeeds with the ability of whoever did the work. All runs go into one zip,
one folder per run.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from .decisionbench_archive import run_members, write_zip

POOL = (("gpt-5.5", "OpenAI", "frontier"), ("gpt-5.4", "OpenAI", "strong-mid"),
        ("claude-opus-4.6", "Anthropic", "frontier"), ("claude-sonnet-4.6", "Anthropic", "strong-mid"),
        ("gemini-3.1-pro", "Google", "frontier"), ("gemini-3-flash", "Google", "strong-mid"))
PRICES = {"gpt-5.5": (5.0, 30.0), "gpt-5.4": (2.5, 15.0), "claude-opus-4.6": (5.0, 25.0),
          "claude-sonnet-4.6": (3.0, 15.0), "gemini-3.1-pro": (2.0, 12.0), "gemini-3-flash": (0.5, 3.0)}
CONDITIONS = ("blind", "aware-c1", "aware-c2", "aware-c3", "aware-tool-only")
# Per condition: chance of delegating, and of picking the best peer for the task's skill.
DELEGATION = {"blind": (0.35, 0.25), "aware-c1": (0.35, 0.3), "aware-c2": (0.4, 0.45), "aware-c3": (0.4, 0.4),
              "aware-tool-only": (0.45, 0.6)}
# Suite -> skill -> (tool of its steps, arguments); None = a text step.
SUITE_SKILLS = {
    "gaia": {"information_retrieval": ("web_search", {"query": "population of Lyon"}),
             "numerical_computation": ("calculator", {"expression": "17 * 23 + 4"}),
             "multi_step_reasoning": ("read_document", {"name": "report.pdf"})},
    "tau": {"information_retrieval": ("get_user_details", {"user_id": "mia_li"}),
            "tool_schema_adherence": ("book_reservation", {"user_id": "mia_li", "cabin": "economy"}),
            "domain_policy_compliance": (None, "I cannot change that: it is against our policy.")},
    "bfcl": {"tool_schema_adherence": ("mkdir", {"dir_name": "docs"}),
             "multi_turn_state_tracking": (None, "The file was moved as requested.")},
}
TASKS_PER_CELL = {"stage1": 8, "stage2": 6}


def abilities(rng: random.Random) -> dict[str, dict[str, float]]:
    skills = sorted({s for suite in SUITE_SKILLS.values() for s in suite})
    base = {"frontier": 0.75, "strong-mid": 0.6}
    return {m: {s: min(0.97, max(0.1, base[tier] + rng.uniform(-0.3, 0.25))) for s in skills} for m, _, tier in POOL}


class TaskTrace:
    """Builds one task's trace lines."""

    def __init__(self, rng: random.Random, model: str, suite: str, ts: str):
        self.rng, self.model, self.suite, self.ts, self.lines, self.step, self.cost = rng, model, suite, ts, [], 0, 0.0

    def _usage(self, model: str) -> tuple[dict[str, int], float]:
        prompt, completion = self.rng.randint(2000, 9000), self.rng.randint(80, 600)
        price_in, price_out = PRICES[model]
        cost = round((prompt * price_in + completion * price_out) / 1e6, 6)
        self.cost += cost
        return {"prompt_tokens": prompt, "completion_tokens": completion, "reasoning_tokens": 0,
                "cached_tokens": 0}, cost

    def completion(self, tools: list[tuple[str, dict]], content: str | None = None) -> list[str]:
        self.step += 1
        usage, cost = self._usage(self.model)
        ids = [f"call_{self.step}_{i}" for i in range(len(tools))]
        self.lines.append({"type": "completion", "step": self.step, "ts": self.ts, "model": self.model, "usage": usage,
                           "finish_reason": "tool_calls" if tools else "stop", "latency_s": round(self.rng.uniform(1, 8), 2),
                           "cost_usd": cost, "content": content,
                           "tool_calls": [{"id": i, "name": n, "arguments": json.dumps(a)} for i, (n, a) in zip(ids, tools)]})
        for call_id, (name, _) in zip(ids, tools):
            self.lines.append({"type": "tool_result", "step": self.step, "tool_call_id": call_id, "name": name,
                               "content": "ok", "error": None, "latency_s": round(self.rng.uniform(0.1, 2), 2)})
        return ids

    def delegate(self, peer: str) -> None:
        (call_id,) = self.completion([("call_model", {"model": peer, "subtask": "Finish this part.", "budget_usd": 0.5})])
        usage, cost = self._usage(peer)
        self.lines.insert(len(self.lines) - 1, {
            "type": "peer_completion", "parent_tool_call_id": call_id, "model": peer, "usage": usage,
            "finish_reason": "stop", "latency_s": round(self.rng.uniform(2, 10), 2), "cost_usd": cost, "content": "Done."})


def play_task(rng, model, suite, skill, split, condition, ability, ts) -> tuple[list[dict], dict[str, Any], set[str]]:
    task = TaskTrace(rng, model, suite, ts)
    tool, payload = SUITE_SKILLS[suite][skill]
    for _ in range(rng.randint(1, 3)):
        task.completion([(tool, payload)]) if tool else task.completion([], payload)
    worker, profiles_read = model, set()
    want, best_rate = DELEGATION[condition]
    if split == "stage2" and rng.random() < want:
        peers = [m for m, _, _ in POOL if m != model]
        best = max(peers, key=lambda m: ability[m][skill])
        if condition == "aware-tool-only":
            task.completion([("read_profile", {"model": best})])
            profiles_read.add(best)
        worker = best if rng.random() < best_rate else rng.choice(peers)
        task.delegate(worker)
    task.completion([], "Final answer.")
    quality = 1.0 if rng.random() < ability[worker][skill] else 0.0
    record = {"task_id": None, "quality": quality, "cost_usd": round(task.cost, 6),
              "latency_s": round(sum(line.get("latency_s", 0) for line in task.lines), 2), "n_steps": task.step, "error": None}
    return task.lines, record, profiles_read


def _run(rng, ability, model, suite, split, condition) -> dict[str, str]:
    shard = "airline" if suite == "tau" else None
    run_id = f"dcb-{suite}-{split}-{condition}-{model}"
    records, traces, profiles = [], {}, {}
    for n in range(TASKS_PER_CELL[split]):
        skill = sorted(SUITE_SKILLS[suite])[n % len(SUITE_SKILLS[suite])]
        task_id = f"airline-task-{n}" if suite == "tau" else f"{suite}/{split[-1]}{n:03d}"
        lines, record, read = play_task(rng, model, suite, skill, split, condition, ability, "2026-04-25T10:00:00Z")
        traces[task_id], records = lines, records + [record | {"task_id": task_id}]
        profiles |= {m: f"# {m}\nProfile card served to {model}.\n" for m in read}
    manifest = {"run_id": run_id, "suite": suite, "shard": shard, "split": split, "condition": condition,
                "orchestrator": model, "tagger_version": "v2.0-2026-05-01", "delegation_cap": 10,
                "pool": [{"model": m, "vendor": v, "tier": t} for m, v, t in POOL],
                "started_at": "2026-04-25T10:00:00Z", "finished_at": "2026-04-25T13:00:00Z"}
    return run_members(manifest, records, traces, profiles, folder=f"{run_id}/")


def write_decisionbench_demo(folder: Path, seed: int = 7) -> Path:
    rng = random.Random(f"decisionbench/{seed}")
    ability = abilities(rng)
    members: dict[str, str] = {}
    for model, _, _ in POOL:
        for suite in SUITE_SKILLS:
            members |= _run(rng, ability, model, suite, "stage1", "blind")
            for condition in CONDITIONS:
                members |= _run(rng, ability, model, suite, "stage2", condition)
    folder.mkdir(parents=True, exist_ok=True)
    return write_zip(folder / "decisionbench-sweep.zip", members)
