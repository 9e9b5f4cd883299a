"""Answers and labels as native-format event lines (docs/judging.md has the contract).

Ids derive from content, so committing a line twice (a crashed run's spool, a group sent
again) stores it once: an LLM judgment's id from its answer key, a label's from what it says
and what it replaces. `seq` is the time in microseconds, twice over (a call's `llm_call` event
just before its judgment), so events of one run rise in seq as the quality gate expects.
"""

from __future__ import annotations

import hashlib
import threading
import time
from datetime import datetime, timezone
from decimal import Decimal
from typing import Any

import orjson

from ...schema.native import dumps_event
from ..prices import PriceRegistry
from .answers import Answer
from .providers import Reply
from .rubric import Judge, Rubric

BENCHMARK = "judging"
TARGET_FIELDS = {"run_id": "target_run_id", "task_id": "target_task_id", "model": "target_model"}


def answer_key(rubric: Rubric, judge: Judge, target_id: str, prompt: str) -> str:
    """What makes an answer the same answer, never asked for twice: the rubric, the judge, what
    is sent to it, and the target's rendered prompt. The target's id is part of it too: two
    targets whose prompts read the same are still two judgments (each its own event)."""
    return hashlib.sha256(orjson.dumps([rubric.digest, judge.rater, rubric.params_for(judge), target_id, prompt],
                                       option=orjson.OPT_SORT_KEYS)).hexdigest()


def judge_run_id(rubric_name: str) -> str:
    return f"judge:{rubric_name}"


def labels_run_id(rubric_name: str) -> str:
    return f"labels:{rubric_name}"


_LAST = [0]
_LAST_LOCK = threading.Lock()


def stamp() -> tuple[datetime, int]:
    """Now, and the seq of an event written now (even: the judgment takes seq + 1); strictly
    rising within this process, so two labels written in the same microsecond keep their order."""
    with _LAST_LOCK:
        micros = _LAST[0] = max(time.time_ns() // 1000, _LAST[0] + 1)
    return datetime.fromtimestamp(micros / 1e6, timezone.utc), 2 * micros


def target_fields(target: dict[str, Any]) -> dict[str, Any]:
    """The target's id, run, task and model (as the target query gave them) and reference."""
    fields = {"target_id": str(target["target_id"])}
    fields |= {name: _text(target.get(column)) for column, name in TARGET_FIELDS.items()}
    if target.get("reference") is not None:
        fields["reference"] = _plain(target["reference"])
    return fields


def judge_events(rubric: Rubric, judge: Judge, target: dict[str, Any], key: str, reply: Reply, answer: Answer,
                 prices: PriceRegistry) -> list[tuple[int, bytes]]:
    """The judge's `llm_call` and its `judgment`, as (seq, line)."""
    ts, seq = stamp()
    cost = prices.cost(judge.model if prices.lookup(judge.model) else reply.model, reply.prompt_tokens,
                       reply.completion_tokens, reply.cached_tokens)
    target_id = str(target["target_id"])
    common = {"run_id": judge_run_id(rubric.name), "benchmark": BENCHMARK, "ts": ts, "task_id": target_id,
              "agent": judge.rater, "model": judge.model, "prompt_tokens": reply.prompt_tokens,
              "completion_tokens": reply.completion_tokens, "cost_usd": cost, "latency_s": round(reply.latency_s, 6)}
    call = common | {"event_id": _id("llm_call", key), "kind": "llm_call", "seq": seq,
                     "cached_tokens": reply.cached_tokens, "finish_reason": reply.finish_reason,
                     "payload": {"provider": judge.provider, "requested_model": judge.model,
                                 "served_model": reply.model, "request_id": reply.request_id, **reply.meta,
                                 "params": rubric.params_for(judge), "rubric": rubric.name, "key": key}}
    answered = {"label": answer.label, "value": answer.value, "reason": answer.reason, "valid": answer.valid}
    if not answer.valid:
        answered |= {"valid": False, "raw": answer.raw, "problem": answer.problem}
    judgment = common | {"event_id": key[:32], "kind": "judgment", "seq": seq + 1,
                         "payload": _compact({**rubric_fields(rubric), **target_fields(target), "rater": judge.rater,
                                              "rater_kind": "llm", **answered, "provider": judge.provider,
                                              "params": rubric.params_for(judge), "key": key,
                                              **answer_space(rubric)})}
    return [(seq, dumps_event(call)), (seq + 1, dumps_event(judgment))]


def label_event(rubric_name: str, target: dict[str, Any], annotator: str, label: str | None, value: float | None,
                note: str | None, supersedes: str | None, rubric: Rubric | None = None) -> dict[str, Any]:
    """A person's label of a target: a `judgment` with rater_kind human."""
    ts, seq = stamp()
    payload = _compact({"rubric": rubric_name, **(rubric_fields(rubric) if rubric else {}), **target_fields(target),
                        "rater": annotator, "rater_kind": "human", "label": label, "value": value, "note": note})
    identity = [rubric_name, payload["target_id"], annotator, label, value, note, supersedes]
    return {"event_id": _id("label", orjson.dumps(identity).decode()), "run_id": labels_run_id(rubric_name),
            "benchmark": BENCHMARK, "kind": "judgment", "seq": seq, "ts": ts, "task_id": payload["target_id"],
            "agent": annotator, "supersedes": supersedes, "payload": payload}


def rubric_fields(rubric: Rubric) -> dict[str, Any]:
    return {"rubric": rubric.name, "rubric_version": rubric.version, "rubric_digest": rubric.digest}


def answer_space(rubric: Rubric) -> dict[str, Any]:
    """What a rater may answer under this rubric: how `tracewh label` checks a label without the rubric file."""
    return {"label_set": list(rubric.labels)} if rubric.labels is not None else {"scale": list(rubric.scale)}


def _id(kind: str, text: str) -> str:
    return hashlib.sha256(f"{kind}\0{text}".encode()).hexdigest()[:32]


def _compact(payload: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in payload.items() if v is not None}


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def _plain(value: Any) -> Any:
    """A reference as JSON holds it: numbers and text as they are, anything else as text."""
    if isinstance(value, Decimal):
        return float(value)
    return value if isinstance(value, (str, int, float, bool)) else str(value)
