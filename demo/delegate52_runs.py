"""Generated DELEGATE-52 relays, written exactly as the harness writes them.

One zip: `logs/relay/results_{domain}_{model}.jsonl` (lines of a file's runs interleaved,
as the harness's worker pool leaves them) and the environment dataset `delegate52.jsonl`.
Each round trip loses a little (0-3 points) except for sparse critical failures of 10-30
points; a few relays stop early; a few steps fail with context_mismatch. Agentic runs
(`agentic-<model>`) use tools and sometimes read distractor files.
"""

from __future__ import annotations

import json
import random
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..ingest.adapters.delegate52.domains import DOMAINS

N_ROUND_TRIPS = 10
DOMAINS_USED = ("subtitles", "accounting", "calendar", "dns", "crystal", "python", "chess", "graphviz")
ENVS_PER_DOMAIN = 2
START_SECONDS = 1776000000  # 2026-04-12, as the ObjectId time prefix


@dataclass(frozen=True)
class RelayModel:
    name: str
    small_drop: float  # mean loss per round trip outside critical failures
    critical_rate: float  # chance a round trip is a critical failure
    records_cost: bool  # the harness's built-in price table knows it (gpt-4.1)


MODELS = (
    RelayModel("gemini-3.1-pro", 0.006, 0.03, False),
    RelayModel("claude-opus-4.6", 0.010, 0.05, False),
    RelayModel("gpt-5.4", 0.012, 0.06, False),
    RelayModel("gpt-4.1", 0.025, 0.12, True),
)
AGENTIC = ("gpt-5.4", "gpt-4.1")  # also run with tools
NO_DISTRACTORS = ("gpt-5.4",)  # also run without distractor files


def _configs() -> list[tuple[RelayModel, str, bool]]:
    configs = [(m, "direct", True) for m in MODELS]
    configs += [(m, "agentic", True) for m in MODELS if m.name in AGENTIC]
    configs += [(m, "direct", False) for m in MODELS if m.name in NO_DISTRACTORS]
    return configs


def _scores(rng: random.Random, model: RelayModel, domain: str, mode: str) -> list[float]:
    score, scores = 1.0, []
    lossless = domain == "python" and rng.random() < 0.8  # most models keep Python intact
    for _ in range(N_ROUND_TRIPS):
        if not lossless:
            critical = rng.random() < model.critical_rate * (1.3 if mode == "agentic" else 1.0)
            drop = rng.uniform(0.10, 0.30) if critical else rng.uniform(0, 2 * model.small_drop)
            score = max(0.0, score - drop)
        scores.append(round(score, 4))
    return scores


class RelayWriter:
    def __init__(self, rng: random.Random, env: dict[str, Any], model: RelayModel, mode: str, distractors: bool):
        self.rng, self.env, self.model, self.mode, self.distractors = rng, env, model, mode, distractors
        self.model_name = ("agentic-" if mode == "agentic" else "") + model.name
        self.clock = START_SECONDS + rng.randrange(0, 86400 * 3)

    def _rid(self) -> str:
        self.clock += self.rng.randint(20, 90)
        return f"{self.clock:08x}{self.rng.getrandbits(64):016x}"

    def lines(self) -> list[dict[str, Any]]:
        rng, env = self.rng, self.env
        scores = _scores(rng, self.model, env["sample_type"], self.mode)
        stop_after = rng.randint(2, N_ROUND_TRIPS - 1) if rng.random() < 0.04 else N_ROUND_TRIPS
        edits = [e["target_state"] for e in env["states"][0]["prompts"]]
        lines, rids, states = [], [], []
        for rt in range(1, stop_after + 1):
            edit = edits[(rt - 1) % len(edits)]
            for direction in ("forward", "backward"):
                rids.append(self._rid())
                states.append(edit if direction == "forward" else "basic_state")
                lines.append(self._line(rt, direction, rids, states, scores[rt - 1]))
        return lines

    def _line(self, rt: int, direction: str, rids: list[str], states: list[str], score: float) -> dict[str, Any]:
        rng, doc_tokens = self.rng, self.env["metadata"]["basic_state_num_tokens"]
        prompt = doc_tokens + 600 + (rng.randint(8000, 12000) if self.distractors else 0)
        completion = int(doc_tokens * rng.uniform(0.9, 1.1))
        if self.mode == "agentic":
            prompt, completion = int(prompt * rng.uniform(2.0, 4.0)), int(completion * rng.uniform(0.5, 0.9))
        latency = round(2 + completion / rng.uniform(60, 120) * (2.0 if self.mode == "agentic" else 1.0), 2)
        cost = round((prompt * 2.0 + completion * 8.0) / 1e6, 6) if self.model.records_cost else 0.0
        line = {
            "sample_id": self.env["sample_id"], "sample_type": self.env["sample_type"], "response_id": rids[-1],
            "model_name": self.model_name, "timestamp": "2026-04-14_18-01-31",
            "raw_llm_response": f"```{self.env['sample_id']}.txt\n(document after {direction} edit {rt})\n```",
            "target_state_id": states[-1], "initial_state_id": "basic_state",
            "evaluation": self._evaluation(score) if direction == "backward" else {},
            "state_chain": list(states), "rid_chain": list(rids), "round_trip_num": rt,
            "round_trip_direction": direction, "num_retries": 1, "llm_latency": latency,
            "prompt_tokens": prompt, "completion_tokens": completion, "reasoning_tokens": 0,
            "total_tokens": prompt + completion, "total_usd": cost, "distractor_included": self.distractors,
        }
        if self.mode == "agentic":
            line |= self._agentic_fields()
        return line

    def _evaluation(self, score: float) -> dict[str, Any]:
        if self.rng.random() < 0.003:
            return {"error": "context_mismatch", "detailed_error": "One or more files are missing from the generated context."}
        evaluation: dict[str, Any] = {"score": score}
        _, ref_key, gen_key = DOMAINS[self.env["sample_type"]]
        if ref_key and gen_key:
            n_ref = self.env["metadata"]["n_elements"]
            coverage = 1 - self.rng.uniform(0.2, 0.6) * (1 - score)  # part of the loss is deleted elements
            evaluation |= {ref_key: n_ref, gen_key: round(n_ref * coverage)}
        return evaluation

    def _agentic_fields(self) -> dict[str, Any]:
        rng = self.rng
        distractors = [p.split("/", 1)[1] for p in self.env["files"] if p.startswith("distractor_context/")]
        reads = [f"{self.env['sample_id']}.txt"] + [d for d in distractors if self.distractors and rng.random() < 0.2]
        method = rng.choices((["run_python"], ["write_file"], ["run_python", "write_file"], []), (45, 45, 9, 1))[0]
        tools = ["read_file"] * len(reads) + method + ["finish"]
        return {"agentic_num_turns": len(tools) + rng.randint(0, 2), "agentic_num_tool_calls": len(tools),
                "agentic_tool_calls": [{"tool": t, "turn": i + 1, "args_keys": []} for i, t in enumerate(tools)],
                "agentic_operation_sequence": tools, "agentic_finished_cleanly": rng.random() < 0.95,
                "agentic_files_read": reads}


def environment(rng: random.Random, domain: str, n: int) -> dict[str, Any]:
    env_id = f"{domain}{n}"
    edits = [f"edit_{i}_state" for i in range(1, rng.randint(5, 8) + 1)]
    return {
        "sample_id": env_id, "sample_type": domain, "sample_name": f"Demo {domain} {n}",
        "metadata": {"basic_state_num_tokens": rng.randint(3000, 5000), "n_elements": rng.randint(40, 200)},
        "states": [{"state_id": "basic_state", "solution_folder": "basic_state", "context": [f"{env_id}.txt"],
                    "prompts": [{"target_state": e, "prompt": f"Apply {e}", "prompt_id": f"basic_to_{e}"} for e in edits]}],
        "files": {f"basic_state/{env_id}.txt": "...", **{f"distractor_context/ref_{i}.md": "..." for i in range(3)}},
    }


def interleave(rng: random.Random, runs: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Merge runs' lines in random order, each run's own lines staying in order (as a worker pool writes)."""
    queues, out = [list(reversed(r)) for r in runs if r], []
    while queues:
        queue = rng.choice(queues)
        out.append(queue.pop())
        if not queue:
            queues.remove(queue)
    return out


def write_delegate52_demo(folder: Path, seed: int = 7) -> Path:
    """The relay logs and dataset of all demo configurations, as one zip."""
    rng = random.Random(f"delegate52/{seed}")
    envs = [environment(rng, d, n) for d in DOMAINS_USED for n in range(1, ENVS_PER_DOMAIN + 1)]
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "delegate52-relays.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for model, mode, distractors in _configs():
            for domain in DOMAINS_USED:
                runs = [RelayWriter(rng, e, model, mode, distractors).lines() for e in envs if e["sample_type"] == domain]
                suffix = "" if distractors else "-nodistractors"
                name = f"logs/relay{suffix}/results_{domain}_{('agentic-' if mode == 'agentic' else '')}{model.name}.jsonl"
                _write(archive, name, interleave(rng, runs))
        _write(archive, "delegate52.jsonl", envs)
    return path


def _write(archive: zipfile.ZipFile, name: str, records: list[dict[str, Any]]) -> None:
    info = zipfile.ZipInfo(name, date_time=(2026, 4, 14, 0, 0, 0))  # fixed: same bytes each time
    info.compress_type = zipfile.ZIP_DEFLATED
    archive.writestr(info, "".join(json.dumps(r) + "\n" for r in records))
