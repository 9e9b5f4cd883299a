"""DELEGATE-52 single-edit QA logs (`logs/edit_testing/{sample_id}_{model}.jsonl`) -> events.

Format: docs/formats/delegate52.md §8.

Per-edit records (`direction` forward/backward) become `llm_call` events; round-trip
summaries (`direction: round_trip`) become `score` events with metric `qa_round_trip`
(the backward score; 0 with the error kept when the evaluation failed). A run is one
(environment, model, run_idx); lines have no lock, so order is the file's.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ....schema import event_id
from ...context import AdapterContext
from ...fields import Fields
from .domains import domain_info
from .relay import interaction_time, logged_cost

BENCHMARK = "delegate52"
HARNESS = "qa"


def events(rows: Iterator[Fields], ctx: AdapterContext) -> Iterator[tuple[int, dict[str, Any]]]:
    for f in rows:
        line = f.line
        direction = f.req("direction", "string")
        if direction == "round_trip":
            yield line, summary_event(f, line)
        elif direction in ("forward", "backward"):
            yield line, edit_event(f, line, direction, ctx)
        else:
            raise f.error("direction", f"expected forward, backward or round_trip, got {direction!r}")


def _envelope(f: Fields, line: int, kind: str, key: str) -> dict[str, Any]:
    raw_model = f.req("model_name", "string")
    env_id = f.req("sample_id", "string")
    model = raw_model.removeprefix("agentic-")
    run_id = f"qa:{env_id}:{raw_model}:{f.opt('run_idx', 'integer', 0)}"
    return {"event_id": event_id(BENCHMARK, HARNESS, run_id, key, kind), "run_id": run_id, "benchmark": BENCHMARK,
            "kind": kind, "seq": line, "task_id": env_id, "model": model}


def _context(f: Fields) -> dict[str, Any]:
    domain = f.opt("sample_type", "string")
    return {"harness": HARNESS, "domain": domain, "category": domain_info(domain or "")[0],
            "distractors": f.opt("distractor_included", "boolean", False)}


def edit_event(f: Fields, line: int, direction: str, ctx: AdapterContext) -> dict[str, Any]:
    response_id = f.opt("response_id", "string") or f"line{line}"
    event = _envelope(f, line, "llm_call", response_id)
    prompt, completion = f.opt("prompt_tokens", "integer"), f.opt("completion_tokens", "integer")
    cost, _ = logged_cost(f, ctx, event["model"], prompt, completion)
    evaluation = f.sub("evaluation")
    return event | {
        "ts": interaction_time(response_id, f.opt("timestamp", "string")),
        "subtask": f.opt("target_state_id", "string"), "prompt_tokens": prompt, "completion_tokens": completion,
        "reasoning_tokens": f.opt("reasoning_tokens", "integer"), "latency_s": f.opt("llm_latency", "number"),
        "cost_usd": cost,
        "payload": _context(f) | {"direction": direction, "response_id": response_id,
                                  "source_state_id": f.opt("source_state_id", "string"),
                                  "score": evaluation.opt("score", "number"), "error": evaluation.opt("error", "string")},
    }


def summary_event(f: Fields, line: int) -> dict[str, Any]:
    forward_id, backward_id = f.opt("forward_response_id", "string"), f.opt("backward_response_id", "string")
    event = _envelope(f, line, "score", f"{forward_id}/{backward_id}")
    backward = f.opt("backward_score", "number")
    error = f.opt("backward_error", "string")
    return event | {
        "ts": interaction_time(backward_id, f.opt("timestamp", "string")),
        "subtask": f.opt("target_state_id", "string"),
        "score": backward if backward is not None else 0.0, "latency_s": f.opt("total_latency", "number"),
        "cost_usd": f.opt("total_usd", "number"),
        "payload": _context(f) | {"metric": "qa_round_trip", "forward_score": f.opt("forward_score", "number"),
                                  "backward_score": backward, "error": error if backward is None else None,
                                  "forward_error": f.opt("forward_error", "string"),
                                  "round_trip_success": f.opt("round_trip_success", "boolean"),
                                  "forward_response_id": forward_id, "backward_response_id": backward_id,
                                  "total_tokens": f.opt("total_tokens", "integer")},
    }
