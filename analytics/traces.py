"""A task's events as a nested span tree: LLM calls, tools and delegations with their children."""

from __future__ import annotations

from typing import Any

import orjson

SPAN_FIELDS = ("event_id", "kind", "seq", "ts", "agent", "model", "tool_name", "span_id", "parent_span_id",
               "prompt_tokens", "completion_tokens", "cost_usd", "latency_s", "finish_reason", "score")


def span_tree(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Roots in seq order; an event whose parent span is not among them is a root."""
    nodes = [{**{k: e.get(k) for k in SPAN_FIELDS}, "payload": orjson.loads(e["payload"]) if e.get("payload") else None,
              "children": []} for e in events]
    by_span: dict[str, dict[str, Any]] = {}
    for node in nodes:  # a span's first event (e.g. task_started) holds its children
        if node["span_id"]:
            by_span.setdefault(node["span_id"], node)
    roots = []
    for node in nodes:
        parent = by_span.get(node["parent_span_id"])
        (parent["children"] if parent is not None and parent is not node else roots).append(node)
    return roots
