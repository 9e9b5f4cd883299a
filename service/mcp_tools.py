"""What the MCP server's tools and resources answer (docs/mcp.md), as plain functions of a
Warehouse: each calls one Warehouse method and renders what comes back as text an assistant
reads. The SDK wiring (stdio, streamable HTTP, the token rule for labels) is in mcp_server.py.

Queries take the service's limits (ServiceConfig: the guard in its service mode, the time
limit, the byte cap and the row cap of POST /sql), so an assistant can do what a client of
`tracewh serve` can, and no more. Tables are Markdown (analytics/text.py): compact, and read
the same by a model and a person. An answer that was cut says so, and says how to get the rest.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ..analytics import text
from .config import ServiceConfig

if TYPE_CHECKING:
    from ..api import QueryResult, Warehouse
    from ..ingest.judging.labels import LabelInput, LabelReport

PAYLOAD_CHARS = 200  # a trace's payloads are cut to this many characters unless the caller asks otherwise
SHOWN_ROWS = 100  # rows a tool shows unless the caller asks for more (up to the row cap)
EVENT_CALL = "get_event(run_id={run_id!r}, event_id={event_id!r})"


def list_views(wh: Warehouse, group: str | None = None) -> str:
    """Every view (or one group's: core, decisionbench, delegate52, ...): name, description, columns."""
    views = [v for v in wh.views() if group is None or v.group == group]
    if not views:
        groups = sorted({v.group for v in wh.views()})
        return f"no views in group {group!r}; the groups are {', '.join(groups)}"
    return "".join(f"{v.name} ({v.group})  {v.description}\n"
                   f"    {', '.join(f'{name} {kind.lower()}' for name, kind in v.columns)}\n" for v in views)


def view_source(name: str) -> str:
    """A view's file as it ships: the comment block that documents it, then its SQL."""
    from ..errors import NotFoundError
    from ..queries.registry import load_views

    found = next((v for v in load_views() if v.name == name), None)
    if found is None:
        raise NotFoundError(f"no view named {name!r}; list_views lists them")
    return found.sql.strip() + "\n"


def describe_view(wh: Warehouse, name: str) -> str:
    """One view: its columns and types, then its documentation and SQL."""
    source = view_source(name)
    info = next(v for v in wh.views() if v.name == name)
    columns = "".join(f"  {column} {kind.lower()}\n" for column, kind in info.columns)
    return f"{info.name} ({info.group}): {info.description}\n\nColumns:\n{columns}\nDefinition (DuckDB SQL):\n{source}"


def run_sql(wh: Warehouse, config: ServiceConfig, query: str, dialect: str = "duckdb",
            limit: int = SHOWN_ROWS) -> str:
    """A read-only query through the same guard and limits as POST /sql, at most `limit` rows
    (never past the service's row cap), as a Markdown table and a line saying what was left out."""
    shown = max(1, min(limit, config.row_cap))
    result = wh.query(query, dialect=dialect, limit=shown, max_bytes=config.max_response_bytes,
                      timeout_s=config.query_seconds, arrow=False)
    return table(result) + rows_note(result, shown, config)


def table(result: QueryResult) -> str:
    """Markdown; floats to text.DECIMALS places, cells longer than text.TEXT_WIDTH cut with '…'."""
    return text.render(result.columns, result.fetchall(), "markdown", text.Display(cut=True))


def rows_note(result: QueryResult, limit: int, config: ServiceConfig) -> str:
    n = len(result)
    if not result.truncated:
        return f"\n{n} row{'' if n == 1 else 's'}.\n"
    if n >= limit:
        more = (f"raise `limit` (up to the row cap, {config.row_cap})" if limit < config.row_cap
                else f"this is the service's row cap, {config.row_cap}")
        return f"\ntruncated: the first {n} rows; the query has more ({more}, or aggregate in SQL).\n"
    return (f"\ntruncated: the first {n} rows, where the answer reached the byte cap "
            f"({config.max_response_bytes:,} bytes); select fewer or shorter columns.\n")


def list_runs(wh: Warehouse, config: ServiceConfig, filters: dict[str, str] | None = None,
              attrs: dict[str, str] | None = None, order_by: str = "run_id", descending: bool = False,
              limit: int = SHOWN_ROWS, offset: int = 0) -> str:
    """Runs (the `runs` view) filtered by column = value and attribute = value, one page of them."""
    shown = max(1, min(limit, config.row_cap))
    result = wh.runs(filters, attrs=attrs, order_by=order_by, descending=descending, limit=shown, offset=offset,
                     timeout_s=config.query_seconds)
    return table(result) + rows_note(result, shown, config)


def list_tasks(wh: Warehouse, config: ServiceConfig, run_id: str, limit: int = SHOWN_ROWS, offset: int = 0) -> str:
    """A run's tasks (the `tasks` view) in the order they began, one page of them."""
    shown = max(1, min(limit, config.row_cap))
    result = wh.tasks(run_id, limit=shown, offset=offset, timeout_s=config.query_seconds)
    if not len(result) and not offset:
        wh.run(run_id, timeout_s=config.query_seconds)  # NotFoundError for a run that is not there
    return table(result) + rows_note(result, shown, config)


def trace(wh: Warehouse, config: ServiceConfig, run_id: str, task_id: str, payload_chars: int = PAYLOAD_CHARS) -> str:
    """A task's events as an indented tree (a delegation holds the calls made for it), one line
    each, then its payload cut to `payload_chars` characters with the call that gets it whole."""
    roots = wh.trace(run_id, task_id, limit=config.row_cap, timeout_s=config.query_seconds)
    lines: list[str] = []

    def walk(node: dict[str, Any], depth: int) -> None:
        lines.append("  " * depth + _span_line(node))
        if node["payload"] is not None:
            lines.append("  " * depth + "    payload: " + _cut(_json(node["payload"]), payload_chars, run_id,
                                                               node["event_id"]))
        for child in node["children"]:
            walk(child, depth + 1)

    for root in roots:
        walk(root, 0)
    count = len(lines) - sum(1 for line in lines if line.lstrip().startswith("payload: "))
    head = f"run {run_id}, task {task_id}: {count} event{'' if count == 1 else 's'}"
    if count >= config.row_cap:
        head += f" (stopped at the row cap, {config.row_cap}: query `events` for the rest)"
    return head + "\n" + "\n".join(lines) + "\n"


def _span_line(node: dict[str, Any]) -> str:
    """`#seq kind` and what is known of it: who, which model or tool, tokens, cost, time, score."""
    parts = [f"#{node['seq']} {node['kind']}"]
    for key in ("agent", "model", "tool_name", "finish_reason"):
        if node.get(key):
            parts.append(f"{key}={node[key]}")
    if node.get("prompt_tokens") is not None or node.get("completion_tokens") is not None:
        parts.append(f"tokens={_known(node.get('prompt_tokens'))}+{_known(node.get('completion_tokens'))}")
    for key, unit in (("cost_usd", " USD"), ("latency_s", " s"), ("score", "")):
        if node.get(key) is not None:
            parts.append(f"{key.split('_')[0]}={text.float_text(float(node[key]), 6)}{unit}")
    parts.append(f"[event {node['event_id']}]")
    return " ".join(parts)


def _known(value: Any) -> str:
    return "?" if value is None else str(value)


def _cut(whole: str, chars: int, run_id: str, event_id: str) -> str:
    if len(whole) <= chars:
        return whole
    rest = EVENT_CALL.format(run_id=run_id, event_id=event_id)
    return whole[:chars] + f"… ({len(whole) - chars:,} more characters: {rest})"


def event(wh: Warehouse, config: ServiceConfig, run_id: str, event_id: str) -> str:
    """One event whole, every column, as JSON (its payload as JSON, not as a string of it)."""
    row = wh.event(run_id, event_id, timeout_s=config.query_seconds)
    if isinstance(row.get("payload"), str):
        row["payload"] = json.loads(row["payload"])
    whole = _json(row, indent=2)
    if len(whole.encode()) > config.max_response_bytes:  # the byte cap of every answer
        cut = whole.encode()[: config.max_response_bytes].decode(errors="ignore")
        return cut + f"\n… truncated at the byte cap ({config.max_response_bytes:,} bytes)\n"
    return whole + "\n"


def compare(wh: Warehouse, config: ServiceConfig, target: str, by: str, a: str, b: str,
            match: Sequence[str] = ("task_id",), where: str | None = None, n_boot: int = 5000, seed: int = 0,
            rng_key: Sequence[str] = ()) -> str:
    """`tracewh compare ... -f json`: the paired comparison's summary, unmatched and most-changed items.
    Its queries stop at the service's time limit, as POST /sql's do."""
    result = wh.compare(target, by=by, a=a, b=b, match=list(match), where=where, n_boot=n_boot, seed=seed,
                        rng_key=list(rng_key), timeout_s=config.query_seconds)
    return _json(text.json_value(result.to_dict()), indent=2) + "\n"


def add_label(record: Callable[[list[LabelInput]], LabelReport], rubric: str, target_id: str, annotator: str,
              label: str | None = None, score: float | None = None, note: str | None = None) -> str:
    """One person's label of a target, through `record`: Warehouse.label, or over HTTP what
    POST /labels records with."""
    from ..ingest.judging.labels import LabelInput

    report = record([LabelInput(rubric, target_id, annotator, label, score, note, file="add_label")])
    if report.unchanged:
        return f"unchanged: {annotator}'s current label of {target_id} in {rubric} is that already\n"
    replacing = " (replacing their earlier label)" if report.superseded else ""
    return f"label recorded{replacing}: {rubric} / {target_id} by {annotator}; the `labels` view shows it\n"


def event_schema() -> str:
    """The event schema page (docs/events.md), from the code that defines it."""
    from ..schema.docs import schema_markdown

    return schema_markdown()


def _json(value: Any, indent: int | None = None) -> str:
    return json.dumps(value, ensure_ascii=False, indent=indent, default=text.cell_text)
