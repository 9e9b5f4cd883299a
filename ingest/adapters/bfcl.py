"""BFCL multi-turn result and score files (both JSON Lines, despite `.json`).

Result lines `{id, result, input_token_count, output_token_count, latency, inference_log}`:
one `llm_call` per step (one model call; tokens and latency from the per-turn, per-step
arrays; handler-log notes kept), a `tool_call` per decoded call, a `task_finished`
(with the inference error when `result` is a string). Score files: line 1, the summary,
becomes a `registry` event; each later line lists a failing test and becomes a `judgment`
(verdict fail). A test passes when a score file for its category was ingested and does
not list it: the DecisionBench views derive that.

Run: `bfcl:<model>`, model from `--attr model=...` or the path (`result/<model>/...`);
each test is one trace (trace_id from run and test id), so result and score lines meet.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from typing import Any

from ...schema import event_id
from ..context import AdapterContext
from ..fields import Fields
from ..jsonlines import json_lines
from ..sources import SourceFile
from ..toolargs import parse_arguments

name = "bfcl"
description = "BFCL multi-turn result and score files (BFCL_v*_<category>_result.json / _score.json)"

BENCHMARK = "bfcl"
FILE_NAME = re.compile(r"BFCL_v\d+_(?P<category>.+?)_(?P<kind>result|score)\.json$")


def sniff(file: SourceFile, first: dict[str, Any] | None) -> bool:
    if first is None:
        return False
    result = "id" in first and "result" in first
    summary = {"accuracy", "correct_count", "total_count"} <= first.keys()
    return result or summary


def _model(file: SourceFile, ctx: AdapterContext) -> str:
    if ctx.attrs.get("model"):
        return ctx.attrs["model"]
    parts = file.name.split("/")
    for marker in ("result", "score"):
        if marker in parts[:-1] and parts.index(marker) + 1 < len(parts) - 1:
            return parts[parts.index(marker) + 1]
    return "unknown"


def _category(file: SourceFile) -> str | None:
    found = FILE_NAME.search(file.name.rsplit("/", 1)[-1])
    return found["category"] if found else None


def events(file: SourceFile, ctx: AdapterContext) -> Iterator[tuple[int, dict[str, Any]]]:
    model, category = _model(file, ctx), _category(file)
    run_id = f"bfcl:{model}"
    base = {"run_id": run_id, "benchmark": BENCHMARK}
    yield 0, base | {"kind": "run_attrs", "seq": 0, "payload": {"suite": "bfcl", "model": model, "harness": "bfcl"}}
    for line, record in json_lines(file, ctx.limits.max_line_bytes, ctx.progress):
        f = Fields(record, file.display, line)
        if line == 1 and "accuracy" in record:
            yield line, base | {"kind": "registry", "seq": line, "payload": {
                "name": "bfcl_score_summary", "category": category, "accuracy": f.opt("accuracy", "number"),
                "correct_count": f.opt("correct_count", "integer"), "total_count": f.opt("total_count", "integer")}}
        elif "valid" in record:
            error, test_id = f.sub("error"), f.req("id", "string")
            yield line, base | {"kind": "judgment", "seq": line, "task_id": test_id, "model": model,
                                "trace_id": event_id(run_id, test_id),
                                "score": 0.0, "payload": {"verdict": "fail", "judge": "bfcl", "category": category,
                                                          "error_type": error.opt("error_type", "string"),
                                                          "error_message": error.opt("error_message", "string")}}
        else:
            for event in _test_events(f, model, category, ctx):
                yield line, base | event | {"trace_id": event_id(run_id, event["task_id"])}


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
