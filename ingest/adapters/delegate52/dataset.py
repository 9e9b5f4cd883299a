"""The DELEGATE-52 environment dataset (`delegate52.jsonl`: one row per work environment) -> events.

Format: docs/formats/delegate52.md §9.

Each row becomes one `registry` event (payload name `d52_environment`) holding what the
views need: domain, category, the forward edits with their tags, the distractor file
names, and document size. File contents are not stored.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ....schema import event_id
from ...context import AdapterContext
from ...fields import Fields
from .domains import domain_info

RUN_ID = "delegate52-dataset"
DISTRACTOR_DIR = "distractor_context/"


def events(rows: Iterator[Fields], ctx: AdapterContext) -> Iterator[tuple[int, dict[str, Any]]]:
    for f in rows:
        yield f.line, environment_event(f, f.line)


def forward_edits(f: Fields) -> list[dict[str, Any]]:
    """The start state's prompts: one forward edit each, with tags when the dataset has them."""
    metadata = f.sub("metadata")
    start = f.opt("start_state", "string") or metadata.opt("start_state", "string") or "basic_state"
    states = [s for s in f.req("states", "list") if isinstance(s, dict)]
    start_state = next((s for s in states if s.get("state_id") == start), {})
    return [{"edit_id": p.get("target_state"), "prompt_id": p.get("prompt_id"),
             "tags": p.get("operations") or p.get("tags") or []}
            for p in start_state.get("prompts", []) if isinstance(p, dict)]


def environment_event(f: Fields, line: int) -> dict[str, Any]:
    env_id, domain = f.req("sample_id", "string"), f.req("sample_type", "string")
    files = f.req("files", "object")
    distractors = sorted(p[len(DISTRACTOR_DIR):] for p in files if p.startswith(DISTRACTOR_DIR))
    edits = forward_edits(f)
    metadata = f.sub("metadata")
    return {
        "event_id": event_id("delegate52-dataset", env_id), "run_id": RUN_ID, "benchmark": "delegate52",
        "kind": "registry", "seq": line, "task_id": env_id,
        "payload": {"name": "d52_environment", "env_id": env_id, "domain": domain,
                    "category": domain_info(domain)[0], "sample_name": f.opt("sample_name", "string"),
                    "n_edits": len(edits), "edits": edits, "distractor_files": distractors,
                    "doc_tokens": metadata.opt("basic_state_num_tokens", "number")},
    }
