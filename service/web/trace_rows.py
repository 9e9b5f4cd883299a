"""A task's span tree (Warehouse.trace) as the rows of the trace page.

The tree is drawn as a flat list of rows in depth-first order, each knowing its depth and
parent: a page of rows can be sent (and more appended) without cutting nested markup, and
folding a node hides the rows after it that are deeper. Delegations start folded, so a
trace opens on the orchestrator's own steps and the delegated work is one key away.
Each row's time bar spans its own call (ts + latency) or, for a node with children, the
whole subtree, on the task's time axis.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

FOLDED_KINDS = frozenset({"delegation"})
BAR_WIDTH = 1000.0  # the SVG viewBox width of a time bar
MIN_BAR = 4.0  # an instant stays visible
LABEL_CHARS = 120


@dataclass
class TraceRow:
    index: int
    node: dict[str, Any]  # the span: its fields, payload (and children, which rows do not use)
    depth: int
    parent: int | None
    n_children: int
    expanded: bool = True
    hidden: bool = False
    start: float | None = None  # epoch seconds: the subtree's extent
    end: float | None = None
    bar: tuple[float, float] | None = None  # (x, width) within BAR_WIDTH

    # Worked out for the rows on the page only: a page shows a slice of a big trace.
    @property
    def label(self) -> str:
        return label(self.node)

    @property
    def tokens(self) -> int | None:
        counted = [self.node[k] for k in ("prompt_tokens", "completion_tokens") if self.node.get(k) is not None]
        return sum(counted) if counted else None


def trace_rows(spans: list[dict[str, Any]]) -> list[TraceRow]:
    rows = _depth_first(spans)
    _extents(rows)
    _bars(rows)
    _fold(rows)
    return rows


def time_window(rows: list[TraceRow]) -> tuple[float, float] | None:
    """(first start, length in seconds) of the timed rows: the time bars' axis."""
    timed = [r for r in rows if r.start is not None]
    if not timed:
        return None
    first = min(r.start for r in timed)  # type: ignore[type-var]
    return first, max(r.end for r in timed) - first  # type: ignore[type-var, operator]


def _depth_first(spans: list[dict[str, Any]]) -> list[TraceRow]:
    """Pre-order rows; iterative, so a deep delegation chain cannot overflow the stack."""
    rows: list[TraceRow] = []
    stack: list[tuple[dict[str, Any], int, int | None]] = [(s, 0, None) for s in reversed(spans)]
    while stack:
        span, depth, parent = stack.pop()
        children = span.get("children") or []
        rows.append(TraceRow(len(rows), span, depth, parent, len(children)))
        stack.extend((child, depth + 1, len(rows) - 1) for child in reversed(children))
    return rows


def _extents(rows: list[TraceRow]) -> None:
    """Each row's own interval, then (children come after parents) widened to its subtree's."""
    for row in rows:
        ts = row.node.get("ts")
        if isinstance(ts, datetime):
            row.start = ts.timestamp()
            row.end = row.start + max(row.node.get("latency_s") or 0.0, 0.0)
    for row in reversed(rows):
        if row.parent is None or row.start is None:
            continue
        parent = rows[row.parent]
        parent.start = row.start if parent.start is None else min(parent.start, row.start)
        parent.end = row.end if parent.end is None else max(parent.end, row.end)  # type: ignore[type-var]


def _bars(rows: list[TraceRow]) -> None:
    window = time_window(rows)
    if window is None:
        return
    first, length = window[0], max(window[1], 1e-9)
    for row in (r for r in rows if r.start is not None):
        x = min((row.start - first) / length * BAR_WIDTH, BAR_WIDTH - MIN_BAR)  # type: ignore[operator]
        width = min(max((row.end - row.start) / length * BAR_WIDTH, MIN_BAR), BAR_WIDTH - x)  # type: ignore[operator]
        row.bar = (round(x, 1), round(width, 1))


def _fold(rows: list[TraceRow]) -> None:
    for row in rows:
        row.expanded = not (row.n_children and row.node.get("kind") in FOLDED_KINDS)
        if row.parent is not None:
            parent = rows[row.parent]
            row.hidden = parent.hidden or not parent.expanded


def label(node: dict[str, Any]) -> str:
    """What the node did, in a few words (its kind, agent, tokens and cost have their own columns)."""
    payload = node.get("payload") if isinstance(node.get("payload"), dict) else {}
    parts = LABELS.get(node.get("kind") or "", lambda n, p: [])(node, payload)
    text = " · ".join(str(part) for part in parts if part not in (None, ""))
    return text if len(text) <= LABEL_CHARS else text[: LABEL_CHARS - 1] + "…"


def _first_line(value: Any) -> str | None:
    return value.strip().splitlines()[0] if isinstance(value, str) and value.strip() else None


def _score(value: float | None) -> str | None:
    return None if value is None else f"{value:.3f}"


LABELS = {
    "llm_call": lambda n, p: [n.get("model"), n.get("finish_reason")],
    "tool_call": lambda n, p: [n.get("tool_name"), p.get("server")],
    "tool_result": lambda n, p: [n.get("tool_name"), p.get("status")],
    "delegation": lambda n, p: ["→ " + str(p.get("to_agent") or p.get("to_model") or n.get("tool_name") or "?"),
                                p.get("status")],
    "score": lambda n, p: [p.get("metric"), _score(n.get("score"))],
    "judgment": lambda n, p: [p.get("judge"), p.get("verdict"), _score(n.get("score"))],
    "state_diff": lambda n, p: [p.get("op"), ".".join(str(x) for x in (p.get("service"), p.get("table")) if x),
                                p.get("key"), p.get("field")],
    "message": lambda n, p: [p.get("role"), _first_line(p.get("text"))],
    "decision": lambda n, p: [p.get("label")],
    "task_started": lambda n, p: [_first_line(p.get("instruction"))],
    "task_finished": lambda n, p: [p.get("status")],
    "run_finished": lambda n, p: [p.get("status")],
    "error": lambda n, p: [p.get("type"), _first_line(p.get("message"))],
}
