"""Seeded, streaming generators of benchmark-shaped runs at a scale factor, in each benchmark's real format.

    scale 1 ≈ DecisionBench's sweep (23,375 tasks, ~600k LLM calls, tool calls and delegations),
              DELEGATE-52's (310 environments x 19 models x 20 interactions, whole documents in
              every response) and EntCollabBench's (300 tasks x 12 models with full traces).

Each benchmark is written as plain directories of JSONL (what the harnesses leave on disk),
one run's records in memory at a time. The record builders are the demo's (tracewh.demo),
so the shapes are the ones the tests pin down.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tracewh.demo.decisionbench_archive import run_members
from tracewh.demo.decisionbench_runs import CONDITIONS, POOL, SUITE_SKILLS, TaskTrace, abilities
from tracewh.demo.delegate52_runs import RelayModel, RelayWriter, environment, interleave
from tracewh.demo.entcollabbench_archive import jsonl
from tracewh.demo.entcollabbench_runs import TASK_SETS, play_run, task_file
from tracewh.ingest.adapters.delegate52.domains import DOMAINS

D52_MODELS = ("gpt-5.4", "gpt-5.2", "gpt-5-mini", "gpt-4.1", "gpt-4o", "o3", "claude-opus-4.6", "claude-sonnet-4.6",
              "claude-haiku-4.5", "gemini-3.1-pro", "gemini-3-flash", "gemini-2.5-pro", "grok-4", "deepseek-v4-pro",
              "deepseek-v4-flash", "qwen3.5-122b-a10b", "kimi-k2.5", "glm-5", "mistral-large-3")
ECB_MODELS = {"claude-sonnet-4.6": 0.91, "gemini-3.1-pro-preview": 0.9, "gemini-3.1-flash-lite-preview": 0.72,
              "gpt-5.4": 0.88, "gpt-5-mini": 0.8, "deepseek-v4-pro": 0.94, "deepseek-v4-flash": 0.92,
              "qwen3.5-122b-a10b": 0.82, "qwen3.5-35b-a3b": 0.8, "qwen3.5-9b": 0.6, "minimax-m2.7": 0.78,
              "mimo-v2-flash": 0.75}
DCB_TASKS = 23_375
ECB_TASKS = {"mcp_tasks_160": 160, "mcp_multi_tasks_40": 40, "approval_tasks_80": 80, "approval_multi_task_20": 20}
WORDS = ("the of and to in is for on with as by at from that this it be are was an or which data model agent file "
         "table value score run task edit round trip state domain element record line field key page step").split()


def _document(rng: random.Random, chars: int) -> str:
    """Text that compresses like prose (about 3x), so archive ratios and sizes are realistic."""
    out, size = [], 0
    while size < chars:
        line = " ".join(rng.choice(WORDS) + ("" if rng.random() < 0.8 else str(rng.randint(0, 999))) for _ in range(12))
        out.append(line)
        size += len(line) + 1
    return "\n".join(out)


def write_delegate52(folder: Path, scale: float, seed: int = 1) -> list[Path]:
    """One results_{domain}_{model}.jsonl per (domain, model), relays interleaved, plus the dataset file."""
    rng = random.Random(f"bench-d52/{seed}")
    domains = sorted(DOMAINS)
    n_envs = max(1, round(310 * scale))
    envs = [environment(rng, domains[i % len(domains)], i // len(domains) + 1) for i in range(n_envs)]
    docs = {e["sample_id"]: _document(rng, 4 * e["metadata"]["basic_state_num_tokens"]) for e in envs}
    out = folder / "delegate52"
    (out / "logs" / "relay").mkdir(parents=True, exist_ok=True)
    for name in D52_MODELS:
        model = RelayModel(name, rng.uniform(0.004, 0.03), rng.uniform(0.02, 0.12), name == "gpt-4.1")
        for domain in sorted({e["sample_type"] for e in envs}):
            runs = [RelayWriter(rng, e, model, "direct", True).lines() for e in envs if e["sample_type"] == domain]
            with open(out / "logs" / "relay" / f"results_{domain}_{name}.jsonl", "w") as f:
                for line in interleave(rng, runs):
                    line["raw_llm_response"] = f"```{line['sample_id']}.txt\n{docs[line['sample_id']]}\n```"
                    f.write(json.dumps(line) + "\n")
    (out / "delegate52.jsonl").write_text("".join(json.dumps(e) + "\n" for e in envs))
    return [out]


def _dcb_task(rng: random.Random, ability: dict[str, dict[str, float]], model: str, suite: str, skill: str,
              split: str, condition: str) -> tuple[list[dict[str, Any]], float]:
    """A sweep-sized task: 10-40 orchestrator turns, in Stage 2 sometimes a delegation to a peer."""
    task = TaskTrace(rng, model, suite, "2026-04-25T10:00:00Z")
    tool, payload = SUITE_SKILLS[suite][skill]
    for _ in range(rng.randint(10, 40)):
        task.completion([(tool, payload)]) if tool else task.completion([], payload)
    worker = model
    if split == "stage2" and rng.random() < 0.4:
        peers = [m for m, _, _ in POOL if m != model]
        worker = max(peers, key=lambda m: ability[m][skill]) if rng.random() < 0.5 else rng.choice(peers)
        task.delegate(worker)
    task.completion([], "Final answer.")
    return task.lines, 1.0 if rng.random() < ability[worker][skill] else 0.0


def _dcb_cells() -> Iterator[tuple[str, str, str, str]]:
    for model, _, _ in POOL:
        for suite in SUITE_SKILLS:
            for split, condition in [("stage1", "blind"), *(("stage2", c) for c in CONDITIONS)]:
                yield model, suite, split, condition


def write_decisionbench(folder: Path, scale: float, seed: int = 1) -> list[Path]:
    """One decisionbench-run/1 folder per (model, suite, split, condition); DCB_TASKS x scale tasks over all."""
    rng = random.Random(f"bench-dcb/{seed}")
    ability = abilities(rng)
    cells = list(_dcb_cells())
    per_cell = max(1, round(DCB_TASKS * scale / len(cells)))
    out = folder / "decisionbench"
    for model, suite, split, condition in cells:
        run_id = f"bench-{suite}-{split}-{condition}-{model}"
        skills = sorted(SUITE_SKILLS[suite])
        records, traces = [], {}
        for n in range(per_cell):
            task_id = f"{suite}/{split[-1]}{n:05d}"
            traces[task_id], quality = _dcb_task(rng, ability, model, suite, skills[n % len(skills)], split, condition)
            records.append({"task_id": task_id, "quality": quality, "cost_usd": 0.0, "latency_s": 30.0,
                            "n_steps": len(traces[task_id]), "error": None})
        manifest = {"run_id": run_id, "suite": suite, "shard": "airline" if suite == "tau" else None, "split": split,
                    "condition": condition, "orchestrator": model, "tagger_version": "v2.0-2026-05-01",
                    "pool": [{"model": m, "vendor": v, "tier": t} for m, v, t in POOL]}
        for name, text in run_members(manifest, records, traces, {}, folder=f"{run_id}/").items():
            path = out / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    return [out]


def write_entcollabbench(folder: Path, scale: float, seed: int = 1) -> list[Path]:
    """One folder per model with the four task sets (300 tasks at scale 1), results, trajectories and task files."""
    rng = random.Random(f"bench-ecb/{seed}")
    sizes = {name: (subset, n_sub, max(1, round(ECB_TASKS[name] * scale))) for name, (subset, n_sub, _) in TASK_SETS.items()}
    tasks = {name: task_file(rng, subset, n_sub, n, name.split("_")[0] + ("_multi" if n_sub > 1 else ""))
             for name, (subset, n_sub, n) in sizes.items()}
    paths = []
    for day, (model, reliability) in enumerate(ECB_MODELS.items(), start=1):
        out = folder / "entcollabbench" / model
        (out / "traj").mkdir(parents=True, exist_ok=True)
        for name, (subset, _, _) in sizes.items():
            results, trajectory = play_run(rng, model, reliability, tasks[name], subset, day)
            (out / f"result-{name}.jsonl").write_bytes(jsonl(results))
            (out / "traj" / f"traj-{name}.jsonl").write_bytes(jsonl(trajectory))
            (out / f"{name}.json").write_text(json.dumps(tasks[name]))
        paths.append(out)
    return paths


GENERATORS = {"delegate52": write_delegate52, "decisionbench": write_decisionbench, "entcollabbench": write_entcollabbench}
