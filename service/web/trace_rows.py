"""A task's span tree (Warehouse.trace) as the rows of the trace page.

The tree is drawn as a flat list of rows in depth-first order, each knowing its depth and
parent: a page of rows can be sent (and more appended) without cutting nested markup, and
folding a node hides the rows after it that are deeper. Delegations start folded, so a
trace opens on the orchestrator's own steps and the delegated work is one key away.
Each row's time bar spans its own call (ts + latency) or, for a node with children, the
whole subtree, on the task's time axis. Runs of consecutive state diffs under one parent are
one folded row (`state_diffs`): an Inspect trace's store changes would drown its few calls.

When the task's timestamps disagree (they come from different clocks: an EntCollabBench
result file's task_finished before its task_started, the trajectory days later), a time
axis is meaningless: the bars are laid out by sequence instead, one slot per event, and the
rows where the clock jumps are marked with the jump (`gap`). "Disagree": taken in seq order,
some step between consecutive timestamps, forwards or backwards, is longer than
GAP_RATIO times the median step and longer than MIN_GAP_S.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import orjson

from ...analytics.traces import SPAN_FIELDS

GROUP_KIND = "state_diffs"  # the row standing for a run of consecutive state diffs
FOLDED_KINDS = frozenset({"delegation", GROUP_KIND})
GAP_RATIO = 100.0
MIN_GAP_S = 15 * 60.0
ERROR_CHARS = 200
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
    gap: float | None = None  # by sequence: seconds the clock jumps from the event before (signed)

    # Worked out for the rows on the page only: a page shows a slice of a big trace.
    @property
    def label(self) -> str:
        return label(self.node)

    @property
    def error(self) -> str | None:
        """Why the call failed, when its payload says it did (status "error", failed, an error), or
        for a tool call, when its result says so (EntCollabBench writes the error in the result)."""
        results = (c for c in self.node.get("children") or () if c.get("kind") == "tool_result")
        own = failure(self.node)
        return own if own or self.node.get("kind") != "tool_call" else next(filter(None, map(failure, results)), None)

    @property
    def tokens(self) -> int | None:
        counted = [self.node[k] for k in ("prompt_tokens", "completion_tokens") if self.node.get(k) is not None]
        return sum(counted) if counted else None


def trace_rows(spans: list[dict[str, Any]]) -> list[TraceRow]:
    rows = _depth_first(_grouped(spans))
    if _mark_gaps(rows):
        _extents_by_sequence(rows)
    else:
        _extents(rows)
    _bars(rows)
    _fold(rows)
    return rows


def by_sequence(rows: list[TraceRow]) -> bool:
    """True when the timestamps disagree and the bars show the order of events, not their times."""
    return any(r.gap is not None for r in rows)


def event_count(rows: list[TraceRow]) -> int:
    return sum(r.node.get("kind") != GROUP_KIND for r in rows)


def _grouped(spans: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`spans` (and their children, all the way down) with each run of two or more consecutive
    state diffs replaced by one group node holding them."""
    out: list[dict[str, Any]] = []
    stack: list[tuple[list[dict[str, Any]], list[dict[str, Any]]]] = [(spans, out)]  # iterative: deep chains
    while stack:
        siblings, into = stack.pop()
        run: list[dict[str, Any]] = []
        for span in [*siblings, None]:
            if span is not None and span.get("kind") == "state_diff" and not span.get("children"):
                run.append(span)
                continue
            if len(run) > 1:
                into.append({**dict.fromkeys(SPAN_FIELDS), "kind": GROUP_KIND, "event_id": "", "children": run,
                             "payload": {"count": len(run)}})
            else:
                into.extend(run)
            run = []
            if span is not None:
                copy = dict(span, children=[])
                into.append(copy)
                stack.append((span.get("children") or [], copy["children"]))
    return out


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
    _widen(rows)


def _widen(rows: list[TraceRow]) -> None:
    for row in reversed(rows):
        if row.parent is None or row.start is None:
            continue
        parent = rows[row.parent]
        parent.start = row.start if parent.start is None else min(parent.start, row.start)
        parent.end = row.end if parent.end is None else max(parent.end, row.end)  # type: ignore[type-var]


def _mark_gaps(rows: list[TraceRow]) -> bool:
    """Set `gap` on the rows where, in seq order, the clock jumps (see the module's docstring)."""
    timed = sorted((r for r in rows if isinstance(r.node.get("ts"), datetime) and r.node.get("seq") is not None),
                   key=lambda r: r.node["seq"])
    steps = [(b, b.node["ts"].timestamp() - a.node["ts"].timestamp()) for a, b in zip(timed, timed[1:])]
    if not steps:
        return False
    limit = max(GAP_RATIO * statistics.median(abs(step) for _, step in steps), MIN_GAP_S)
    for row, step in steps:
        if abs(step) > limit:
            row.gap = step
    return by_sequence(rows)


def _extents_by_sequence(rows: list[TraceRow]) -> None:
    """One slot per event in seq order (an event without seq gets none), widened to subtrees."""
    ranked = sorted((r for r in rows if r.node.get("seq") is not None), key=lambda r: r.node["seq"])
    for slot, row in enumerate(ranked):
        row.start, row.end = float(slot), float(slot + 1)
    _widen(rows)


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


def failure(node: dict[str, Any]) -> str | None:
    """The error of a failed call, as the adapters write it into payloads: `error` (text, or an
    object such as Inspect's {type, message}), `failed: true`, or `status: "error"` with the
    tool's answer as `text` or `result` (EntCollabBench's tool results). None when it did not fail."""
    payload = node.get("payload") if isinstance(node.get("payload"), dict) else {}
    error = payload.get("error")
    if not (error or payload.get("failed") is True or payload.get("status") == "error"):
        return None
    if isinstance(error, dict):
        error = error.get("message") or orjson.dumps(error).decode()
    text = error if isinstance(error, str) and error.strip() else None
    text = text or _first_line(payload.get("text")) or _first_line(payload.get("result")) or "failed"
    text = " ".join(str(text).split())
    return text if len(text) <= ERROR_CHARS else text[: ERROR_CHARS - 1] + "…"


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
    "span": lambda n, p: [p.get("name"), p.get("operation")],  # a plain OTLP span: its name
    GROUP_KIND: lambda n, p: [f"{p.get('count')} state changes"],
}
