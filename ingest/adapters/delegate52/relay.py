"""DELEGATE-52 relay result logs (`results_{domain}_{model}.jsonl`, one line per interaction) -> events.

Format: docs/formats/delegate52.md §1-§7.

Per line: an `llm_call` (tokens, latency, cost); on backward lines a `score` (the
reconstruction score vs the seed, with the domain's element counts); on agentic lines
one `tool_call` per logged tool use. The first line of each run also yields a
`run_attrs` event (model, mode, distractors, domain, environment).

Identity comes from the log, not from positions, so a results file that grew since
the last ingest re-ingests with the old events deduplicated:
run = rid_chain[0], interaction k = 2*(round_trip_num - 1) + (1 forward | 2 backward),
event ids from response_id. seq = 10000*k + position within the interaction.
Not stored: raw_llm_response (the whole document; its length and hash are kept),
state_chain and rid_chain (derivable), reasoning_content.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from datetime import datetime, timezone
from typing import Any

from ....schema import event_id
from ...context import AdapterContext
from ...fields import Fields
from .domains import domain_info

BENCHMARK = "delegate52"
HARNESS = "relay"
SEQ_PER_INTERACTION = 10_000
SCORE_SLOT = SEQ_PER_INTERACTION - 1


def events(rows: Iterator[Fields], ctx: AdapterContext) -> Iterator[tuple[int, dict[str, Any]]]:
    seen_runs: set[str] = set()
    for f in rows:
        interaction, line = Interaction(f, ctx), f.line
        if interaction.run_id not in seen_runs:
            seen_runs.add(interaction.run_id)
            yield line, interaction.run_attrs()
        yield line, interaction.llm_call()
        yield from ((line, e) for e in interaction.tool_calls())
        if interaction.backward:
            yield line, interaction.score()


def interaction_time(response_id: str | None, timestamp: str | None) -> datetime | None:
    """The UTC second in the BSON ObjectId response_id; else the zone-less local timestamp, read as UTC."""
    if response_id and len(response_id) == 24:
        try:
            return datetime.fromtimestamp(int(response_id[:8], 16), tz=timezone.utc)
        except ValueError:
            pass
    if timestamp:
        try:
            return datetime.strptime(timestamp, "%Y-%m-%d_%H-%M-%S").replace(tzinfo=timezone.utc)
        except ValueError:
            return None
    return None


def logged_cost(f: Fields, ctx: AdapterContext, model: str, prompt: int | None,
                completion: int | None) -> tuple[float | None, str]:
    """(cost, where it came from): the harness logs total_usd = 0.0 for models outside its
    small price table, so only a positive value is a recorded cost."""
    recorded = f.opt("total_usd", "number")
    if recorded is not None and recorded > 0:
        return recorded, "recorded"
    computed = ctx.prices.cost(model, prompt, completion)
    return computed, "price_registry" if computed is not None else "unknown"


class Interaction:
    """One relay line, read and checked once, turned into events on demand."""

    def __init__(self, f: Fields, ctx: AdapterContext):
        self.f = f
        rids = f.req("rid_chain", "list")
        if not rids or not isinstance(rids[0], str):
            raise f.error("rid_chain", "expected a non-empty list of response ids")
        self.run_id = rids[0]
        self.round_trip = f.req("round_trip_num", "integer")
        if self.round_trip < 1:
            raise f.error("round_trip_num", f"expected >= 1, got {self.round_trip}")
        direction = f.req("round_trip_direction", "string")
        if direction not in ("forward", "backward"):
            raise f.error("round_trip_direction", f"expected 'forward' or 'backward', got {direction!r}")
        self.backward = direction == "backward"
        self.k = 2 * (self.round_trip - 1) + (2 if self.backward else 1)
        raw_model = f.req("model_name", "string")
        self.mode = "agentic" if raw_model.startswith("agentic-") else "direct"
        self.model = raw_model.removeprefix("agentic-")
        self.domain = f.req("sample_type", "string")
        self.category, self.ref_key, self.gen_key = domain_info(self.domain)
        self.env_id = f.req("sample_id", "string")
        self.distractors = f.opt("distractor_included", "boolean", False)
        self.response_id = f.opt("response_id", "string") or f"{self.run_id}#{self.k}"
        self.edit_id = self._edit_id()
        self.ts = interaction_time(self.response_id, f.opt("timestamp", "string"))
        self.ctx = ctx

    def _edit_id(self) -> str | None:
        if not self.backward:
            return self.f.opt("target_state_id", "string")
        chain = self.f.opt("state_chain", "list", [])
        return chain[-2] if len(chain) >= 2 and isinstance(chain[-2], str) else None

    def _event(self, kind: str, slot: int, tag: str, **fields: Any) -> dict[str, Any]:
        return {"event_id": event_id(BENCHMARK, self.run_id, self.response_id, tag), "run_id": self.run_id,
                "benchmark": BENCHMARK, "kind": kind, "seq": self.k * SEQ_PER_INTERACTION + slot, "ts": self.ts,
                "task_id": self.env_id, "subtask": self.edit_id, "model": self.model, **fields}

    def _context(self) -> dict[str, Any]:
        return {"harness": HARNESS, "domain": self.domain, "category": self.category, "env_id": self.env_id,
                "mode": self.mode, "distractors": self.distractors, "k": self.k, "round_trip": self.round_trip}

    def run_attrs(self) -> dict[str, Any]:
        attrs = {k: v for k, v in self._context().items() if k not in ("k", "round_trip")}
        return self._event("run_attrs", 0, "run_attrs", seq=0, ts=None, subtask=None,
                           event_id=event_id(BENCHMARK, self.run_id, "run_attrs"),
                           payload=attrs | {"model": self.model})

    def llm_call(self) -> dict[str, Any]:
        f = self.f
        prompt, completion = f.opt("prompt_tokens", "integer"), f.opt("completion_tokens", "integer")
        cost, source = logged_cost(f, self.ctx, self.model, prompt, completion)
        response = f.opt("raw_llm_response", "string", "")
        payload = self._context() | {
            "direction": "backward" if self.backward else "forward", "response_id": self.response_id,
            "target_state_id": f.opt("target_state_id", "string"), "initial_state_id": f.opt("initial_state_id", "string"),
            "total_tokens": f.opt("total_tokens", "integer"), "cost_source": source,
            "response_chars": len(response), "response_sha1": hashlib.sha1(response.encode()).hexdigest(),
        }
        if self.mode == "agentic":
            payload["agentic"] = self._agentic_summary()
        return self._event("llm_call", 0, "llm_call", prompt_tokens=prompt, completion_tokens=completion,
                           reasoning_tokens=f.opt("reasoning_tokens", "integer"),
                           latency_s=f.opt("llm_latency", "number"), cost_usd=cost, payload=payload)

    def _agentic_summary(self) -> dict[str, Any]:
        f = self.f
        return {"turns": f.opt("agentic_num_turns", "integer"), "n_tool_calls": f.opt("agentic_num_tool_calls", "integer"),
                "operations": f.opt("agentic_operation_sequence", "list", []),
                "finished_cleanly": f.opt("agentic_finished_cleanly", "boolean"),
                "files_read": f.opt("agentic_files_read", "list", [])}

    def tool_calls(self) -> Iterator[dict[str, Any]]:
        for i, c in enumerate(self.f.each("agentic_tool_calls")):
            yield self._event("tool_call", i + 1, f"tool{i}", agent="editor", tool_name=c.req("tool", "string"),
                              payload={"harness": HARNESS, "turn": c.opt("turn", "integer"),
                                       "args_keys": c.opt("args_keys", "list", [])})

    def score(self) -> dict[str, Any]:
        ev = self.f.sub("evaluation")
        value = ev.opt("score", "number")
        error = ev.opt("error", "string")
        if value is None:  # context_mismatch / wildcard_mismatch carry no score: they score 0
            value, error = 0.0, error or "no_score"
        if not 0.0 <= value <= 1.0:
            raise ev.error("score", f"expected a score in [0, 1], got {value}")
        payload = self._context() | {
            "metric": "reconstruction", "error": error, "detailed_error": ev.opt("detailed_error", "string"),
            "n_ref": ev.opt(self.ref_key, "number") if self.ref_key else None,
            "n_gen": ev.opt(self.gen_key, "number") if self.gen_key else None,
            "components": {k: v for k, v in ev.record.items()
                           if k != "score" and isinstance(v, (int, float)) and not isinstance(v, bool)},
        }
        return self._event("score", SCORE_SLOT, "score", score=value, payload=payload)
