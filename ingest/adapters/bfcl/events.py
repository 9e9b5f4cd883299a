"""BFCL multi-turn result and score lines -> events (docs/formats/bfcl.md §5).

Result lines `{id, result, input_token_count, output_token_count, latency, inference_log}`:
one `llm_call` per step (one model call; tokens and latency from the per-turn, per-step
arrays; handler-log notes kept), a `tool_call` per decoded call, a `task_finished`
(with the inference error when `result` is a string). Score files: line 1, the summary,
becomes a `registry` event; each later line lists a failing test and becomes a `judgment`
(verdict fail). A test passes when a score file for its category was ingested and does
not list it: the DecisionBench views derive that.

Run: `bfcl:<model>`, model as records.py reads it from `--attr` or the path; each test is
one trace (trace_id from run and test id), so result and score lines meet.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

from ....schema import event_id
from ...context import AdapterContext
from ...fields import Fields
from ...sources import SourceFile
from ...toolargs import parse_arguments
from .records import category_of, model_of, rows

BENCHMARK = "bfcl"


def events(file: SourceFile, ctx: AdapterContext) -> Iterator[tuple[int, dict[str, Any]]]:
    model, category = model_of(file, ctx), category_of(file)
    run_id = f"bfcl:{model}"
    base = {"run_id": run_id, "benchmark": BENCHMARK}
    yield 0, base | {"kind": "run_attrs", "seq": 0, "payload": {"suite": "bfcl", "model": model, "harness": "bfcl"}}
    for f in rows(file, ctx):
        line = f.line
        if line == 1 and "accuracy" in f.record:
            yield line, base | {"kind": "registry", "seq": line, "payload": {
                "name": "bfcl_score_summary", "category": category, "accuracy": f.opt("accuracy", "number"),
                "correct_count": f.opt("correct_count", "integer"), "total_count": f.opt("total_count", "integer")}}
        elif "valid" in f.record:
            error, test_id = f.sub("error"), f.req("id", "string")
            yield line, base | {"kind": "judgment", "seq": line, "task_id": test_id, "model": model,
                                "trace_id": event_id(run_id, test_id),
                                "score": 0.0, "payload": {"verdict": "fail", "judge": "bfcl", "category": category,
                                                          "error_type": error.opt("error_type", "string"),
                                                          "error_message": _error_message(error)}}
        else:
            for event in _test_events(f, model, category, ctx):
                yield line, base | event | {"trace_id": event_id(run_id, event["task_id"])}


def _error_message(error: Fields) -> str | None:
    """The checker writes a string; the runner's own inference_error / force_terminated lines
    write a list of strings (docs/formats/bfcl.md §3), kept as one text, a message a line."""
    if isinstance(error.record.get("error_message"), list):
        return "\n".join(str(m) for m in error.opt("error_message", "list"))
    return error.opt("error_message", "string")


def _grid(f: Fields, key: str) -> list[list[Any]]:
    value = f.opt(key, "list", [])
    return [row if isinstance(row, list) else [] for row in value]


def _cell(grid: list[list[Any]], turn: int, step: int) -> Any:
    return grid[turn][step] if turn < len(grid) and step < len(grid[turn]) else None


def _handler_logs(log: list[Any]) -> dict[tuple[int, int], list[str]]:
    """(turn, step) -> handler_log notes, walking inference_log's turn dicts (state lists are skipped)."""
    notes: dict[tuple[int, int], list[str]] = {}
    turns = [entry for entry in log if isinstance(entry, dict)]
    for t, turn in enumerate(turns):
        for key, entries in turn.items():
            if key.startswith("step_") and key[5:].isdigit() and isinstance(entries, list):
                notes[(t, int(key[5:]))] = [str(e.get("content")) for e in entries
                                            if isinstance(e, dict) and e.get("role") == "handler_log"]
    return notes


def _test_events(f: Fields, model: str, category: str | None, ctx: AdapterContext) -> Iterator[dict[str, Any]]:
    test_id = f.req("id", "string")
    task = {"task_id": test_id, "model": model, "agent": "agent"}
    result = f.record.get("result")
    seq = f.line * 10_000
    if isinstance(result, str):  # "Error during inference: ..."
        yield task | {"kind": "task_finished", "seq": seq + 9_999,
                      "payload": {"category": category, "status": "error", "error": result[:2000]}}
        return
    tokens_in, tokens_out, latency = _grid(f, "input_token_count"), _grid(f, "output_token_count"), _grid(f, "latency")
    notes = _handler_logs(f.opt("inference_log", "list", []))
    step_no, order = 0, itertools.count(seq + 1)
    for t, turn in enumerate(result if isinstance(result, list) else []):
        for s, decoded in enumerate(turn if isinstance(turn, list) else []):
            step_no += 1
            calls = [{"name": str(name), "arguments": parse_arguments(args)}
                     for call in (decoded if isinstance(decoded, list) else []) if isinstance(call, dict)
                     for name, args in call.items()]
            prompt, completion = _cell(tokens_in, t, s), _cell(tokens_out, t, s)
            yield task | {"kind": "llm_call", "seq": next(order), "subtask": f"turn-{t}",
                          "prompt_tokens": prompt, "completion_tokens": completion, "latency_s": _cell(latency, t, s),
                          "cost_usd": ctx.prices.cost(model, prompt, completion),
                          "finish_reason": "tool_calls" if calls else "stop",
                          "payload": {"step": step_no, "turn": t, "tool_calls": calls, "handler_log": notes.get((t, s), [])}}
            for c in calls:
                yield task | {"kind": "tool_call", "seq": next(order), "subtask": f"turn-{t}",
                              "tool_name": c["name"], "payload": {"arguments": c["arguments"], "step": step_no}}
    yield task | {"kind": "task_finished", "seq": seq + 9_999, "payload": {"category": category, "status": "ok"}}
