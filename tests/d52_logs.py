"""Hand-built DELEGATE-52 relay logs, in the harness's own line format."""

from __future__ import annotations

import json

SUBTITLE_COUNTS = ("ref_entry_count", "gen_entry_count")


def relay_lines(run: str, model: str, domain: str, env: str, rounds: list, *, agentic_tools=None,
                last_forward_only: bool = False) -> list[dict]:
    """Lines of one relay; `rounds` holds one evaluation dict per round trip."""
    lines, rids, states = [], [], []
    steps = [(rt, d) for rt in range(1, len(rounds) + 1) for d in ("forward", "backward")]
    if last_forward_only:
        steps.append((len(rounds) + 1, "forward"))
    for rt, direction in steps:
        k = 2 * (rt - 1) + (1 if direction == "forward" else 2)
        rid = f"{1776000000 + k:08x}{abs(hash(run)) % 16**16:016x}"
        rids.append(rid)
        states.append(f"edit_{rt}" if direction == "forward" else "basic_state")
        agentic = model.startswith("agentic-")
        line = {"sample_id": env, "sample_type": domain, "response_id": rid, "model_name": model,
                "timestamp": "2026-04-14_18-01-31", "raw_llm_response": "```doc.txt\nhello```",
                "target_state_id": states[-1], "initial_state_id": "basic_state",
                "evaluation": rounds[rt - 1] if direction == "backward" else {},
                "state_chain": list(states), "rid_chain": list(rids), "round_trip_num": rt,
                "round_trip_direction": direction, "num_retries": 1,
                "llm_latency": 20.0 if agentic else 10.0, "prompt_tokens": 3000 if agentic else 1000,
                "completion_tokens": 100 if agentic else 200, "reasoning_tokens": 0,
                "total_tokens": 3100 if agentic else 1200, "total_usd": 0.02 if agentic else 0.0,
                "distractor_included": True}
        if agentic:
            tools, files = agentic_tools[direction]
            line |= {"agentic_num_turns": len(tools), "agentic_num_tool_calls": len(tools),
                     "agentic_tool_calls": [{"tool": t, "turn": i + 1, "args_keys": []} for i, t in enumerate(tools)],
                     "agentic_operation_sequence": tools, "agentic_finished_cleanly": True,
                     "agentic_files_read": files}
        lines.append(line)
    return lines


def counts(score: float, ref: int, gen: int) -> dict:
    return {"score": score, "entry_coverage_score": 0.9, SUBTITLE_COUNTS[0]: ref, SUBTITLE_COUNTS[1]: gen}


def jsonl(records: list[dict]) -> bytes:
    return b"".join(json.dumps(r).encode() + b"\n" for r in records)


def interleave(*relays: list[dict]) -> list[dict]:
    out, longest = [], max(map(len, relays))
    for i in range(longest):
        out += [r[i] for r in relays if i < len(r)]
    return out
