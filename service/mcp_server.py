"""The MCP server (Model Context Protocol, the official `mcp` SDK): tracewh's views, guarded SQL,
runs, traces, paired comparisons and labels as tools an assistant calls (docs/mcp.md).

Two doors, one server: `tracewh mcp` speaks it over stdio (serve_stdio), and `tracewh serve`
at /mcp over streamable HTTP (mcp_http.py mounts it). Either way every read goes through the service's
query gate and its readers, whose queries run in worker processes under the memory and time
ceilings of POST /sql (service/readers.py, queries/isolation.py), with POST /sql's guard, row
cap and byte cap (mcp_tools.py says what each tool answers). The label tool writes: over HTTP
it needs the ingest token, as POST /labels does; over stdio it exists only with
`tracewh mcp --allow-labels`. A refusal or bad argument is a tool error whose text is the one
line the CLI and POST /sql would give; a crash is the SDK's "Error executing tool", logged on
stderr, and the server goes on.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, TypeVar

from fastapi import HTTPException
from mcp.server.mcpserver import Context, MCPServer
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field

from ..errors import TracewhError
from ..version import __version__
from . import mcp_tools as tools
from .config import ServiceConfig
from .errors import redact

if TYPE_CHECKING:
    from ..api import Warehouse
    from ..ingest.judging.labels import LabelInput, LabelReport

T = TypeVar("T")
# Work on a read of the store, run on the door's terms (the service's gate and readers).
Run = Callable[[Callable[["Warehouse"], T]], Awaitable[T]]
# Records labels as Warehouse.label does (a blocking call: run in a worker thread).
Record = Callable[[list["LabelInput"]], "LabelReport"]
# Raises (an HTTPException, as the service's token rule does) when this request may not label.
LabelRule = Callable[["Context"], None]
Answer = str | CallToolResult  # a tool's text, or a tool error (is_error) whose text is the one-line message

INSTRUCTIONS = """\
tracewh holds LLM-agent benchmark traces (events) and computes metrics as SQL views over them.
Start with list_views (or the tracewh://views resources) and describe_view, then query with sql
(read-only DuckDB SQL; other dialects with `dialect`). list_runs and list_tasks find runs and
tasks; get_trace shows one task's events as a tree with payloads cut short, get_event one event
whole; compare does a paired comparison of two conditions. The event schema is the resource
tracewh://schema/events."""


def build_server(reading: Run, config: ServiceConfig, record: Record | None = None, label_rule: LabelRule | None = None,
                 hidden: list[Path] = ()) -> MCPServer:
    """The tools and resources over `reading`; the label tool only given how to `record` labels
    and the `label_rule` each call must pass. `hidden`: paths taken out of error messages."""
    server = MCPServer("tracewh", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING")
    masked = [(str(p), "<store>") for p in hidden]
    _add_read_tools(server, partial(_answer, reading, masked), config)
    if record is not None and label_rule is not None:
        _add_label_tool(server, partial(_answer, _in_thread, masked), record, label_rule)
    _add_resources(server, reading)
    return server


def _add_read_tools(server: MCPServer, read: Callable[[Callable[[Warehouse], str]], Awaitable[Answer]],
                    config: ServiceConfig) -> None:
    tool = server.tool(annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False), structured_output=False)

    @tool
    async def list_views(group: Annotated[str | None, Field(description="Only this group's views: core, decisionbench, "
                                                            "delegate52, entcollabbench, ...")] = None) -> Answer:
        """Every view: name (group), one-line description, then its columns and types."""
        return await read(lambda wh: tools.list_views(wh, group))

    @tool
    async def describe_view(name: Annotated[str, Field(description="A view, e.g. runs or dcb_quality")]) -> Answer:
        """One view's columns, its documentation (what each column means, NULL rules) and its SQL."""
        return await read(lambda wh: tools.describe_view(wh, name))

    @tool
    async def sql(query: Annotated[str, Field(description="One read-only statement over `events` and the views")],
                  dialect: Annotated[str, Field(description="duckdb, or postgres, mysql, sqlite, spark, trino, "
                                                "bigquery, snowflake, ... (transpiled to DuckDB)")] = "duckdb",
                  limit: Annotated[int, Field(ge=1, description="Rows to show, up to the row cap")] = tools.SHOWN_ROWS,
                  ) -> Answer:
        """Run read-only SQL with the HTTP service's guard and limits (no files, no network, a time
        limit, a row cap and a byte cap). Answers a Markdown table; says when rows were left out."""
        return await read(lambda wh: tools.run_sql(wh, config, query, dialect, limit))

    @tool
    async def list_runs(
        benchmark: Annotated[str | None, Field(description="Only runs of this benchmark")] = None,
        model: Annotated[str | None, Field(description="Only runs of this model")] = None,
        filters: Annotated[dict[str, str] | None, Field(description="More column = value filters on `runs`")] = None,
        attrs: Annotated[dict[str, str] | None, Field(description="Run attribute = value (e.g. condition)")] = None,
        order_by: Annotated[str, Field(description="A column of `runs`")] = "run_id",
        descending: bool = False,
        limit: Annotated[int, Field(ge=1)] = tools.SHOWN_ROWS,
        offset: Annotated[int, Field(ge=0)] = 0,
    ) -> Answer:
        """Runs with their totals (events, calls, tokens, cost) and headline score, filtered and paged."""
        chosen = {**(filters or {}), **({"benchmark": benchmark} if benchmark else {}),
                  **({"model": model} if model else {})}
        return await read(lambda wh: tools.list_runs(wh, config, chosen, attrs, order_by, descending, limit, offset))

    @tool
    async def list_tasks(run_id: str, limit: Annotated[int, Field(ge=1)] = tools.SHOWN_ROWS,
                         offset: Annotated[int, Field(ge=0)] = 0) -> Answer:
        """A run's tasks in the order they began: totals, time span and final score (view `tasks`)."""
        return await read(lambda wh: tools.list_tasks(wh, config, run_id, limit, offset))

    @tool
    async def get_trace(run_id: str, task_id: str,
                        payload_chars: Annotated[int, Field(ge=0, description="Cut each payload to this many "
                                                            "characters")] = tools.PAYLOAD_CHARS) -> Answer:
        """One task's events as a tree (delegations hold the calls made for them), payloads cut short."""
        return await read(lambda wh: tools.trace(wh, config, run_id, task_id, payload_chars))

    @tool
    async def get_event(run_id: str, event_id: str) -> Answer:
        """One event whole: every column, its payload as JSON."""
        return await read(lambda wh: tools.event(wh, config, run_id, event_id))

    @tool
    async def compare(
        target: Annotated[str, Field(description="VIEW.COLUMN, a numeric column, e.g. dcb_tasks.quality")],
        by: Annotated[str, Field(description="The column whose values tell the groups apart, e.g. condition")],
        a: Annotated[str, Field(description="The value of `by` for group a (the baseline)")],
        b: Annotated[str, Field(description="The value of `by` for group b; differences are b - a")],
        match: Annotated[list[str], Field(min_length=1, description="Columns that pair an item of a with "
                                          "one of b")] = ["task_id"],  # noqa: B006 - pydantic copies defaults
        where: Annotated[str | None, Field(description="Filter rows first (SQL), e.g. model = 'gpt-5.4'")] = None,
        n_boot: Annotated[int, Field(ge=100, le=100_000, description="Bootstrap resamples")] = 5000,
        seed: int = 0,
        rng_key: Annotated[list[str], Field(description="Values naming the random stream, as "
                                            "`tracewh compare --rng-key`")] = [],  # noqa: B006
    ) -> Answer:
        """A paired comparison (`tracewh compare ... -f json`): pairs, means, diff b - a with a paired
        bootstrap 95% CI, wins/ties/losses, sign test (McNemar for 0/1), unmatched and most-changed items."""
        return await read(lambda wh: tools.compare(wh, config, target, by, a, b, match, where, n_boot, seed, rng_key))


def _add_label_tool(server: MCPServer, write: Callable[[Callable[[], str]], Awaitable[Answer]], record: Record,
                    label_rule: LabelRule) -> None:
    @server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True,
                                             open_world_hint=False), structured_output=False)
    async def add_label(rubric: str, target_id: str, annotator: str, ctx: Context,
                        label: Annotated[str | None, Field(description="A label (or give score)")] = None,
                        score: Annotated[float | None, Field(description="A score (or give label)")] = None,
                        note: str | None = None) -> Answer:
        """Record a person's label of a target as a judgment event (a later one by the same
        annotator supersedes it); the `labels` view shows it. Over HTTP it needs the ingest token."""
        try:
            label_rule(ctx)
        except HTTPException as refused:
            return _error(f"refused: {refused.detail}")
        return await write(lambda: tools.add_label(record, rubric, target_id, annotator, label, score, note))


def _add_resources(server: MCPServer, reading: Run) -> None:
    """The event schema, the list of views, and each view's documentation and SQL."""
    from ..queries.registry import view_headers

    server.resource("tracewh://schema/events", name="event schema", mime_type="text/markdown",
                    description="Every column of `events`, the event kinds and the native format")(tools.event_schema)

    async def views() -> str:
        return await reading(tools.list_views)

    server.resource("tracewh://views", name="views", description="Every view: description and columns")(views)
    for header in view_headers():
        server.resource(f"tracewh://views/{header.name}", name=header.name, mime_type="text/x-sql",
                        description=header.description)(partial(tools.view_source, header.name))


async def _answer(run: Callable[[Callable[..., str]], Awaitable[str]], masked: list[tuple[str, str]],
                  work: Callable[..., str]) -> Answer:
    """`work` run by `run`; tracewh's errors and the gate's refusals become tool errors whose
    text is the one line POST /sql answers (a ToolError would be prefixed by the SDK)."""
    try:
        return await run(work)
    except TracewhError as e:
        return _error(redact(str(e), masked))
    except HTTPException as e:  # the query gate: busy (503)
        return _error(str(e.detail))


async def _in_thread(work: Callable[[], T]) -> T:
    from starlette.concurrency import run_in_threadpool

    return await run_in_threadpool(work)


def _error(message: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=message)], is_error=True)


# -- stdio: `tracewh mcp` --------------------------------------------------------------------------

def serve_stdio(config: ServiceConfig, allow_labels: bool = False) -> None:
    """Speak MCP on stdin/stdout until the client closes them. Queries run as `tracewh serve` runs
    them (gate, readers, worker processes); labels, with `allow_labels`, on the store directly."""
    from ..api import Warehouse
    from ..queries.isolation import QueryWorkers
    from ..warehouse.layout import resolve_root
    from .gate import QueryGate
    from .readers import Readers

    root = resolve_root(config.warehouse)
    gate = QueryGate(config.running_queries, config.waiting_queries, config.query_seconds)
    workers = QueryWorkers(config.running_queries, config.query_process_memory, config.query_temp_bytes,
                           cache_bytes=config.result_cache_bytes)
    readers = Readers(root, config.query_memory, keep=config.running_queries, isolation=workers)

    async def reading(work: Callable[[Warehouse], T]) -> T:
        return await gate.run(readers.read, work)

    # The user's own assistant on the user's own store: the flag is the permission, not a token.
    record, allowed = (partial(label_on, root), _anyone) if allow_labels else (None, None)
    server = build_server(reading, config, record, allowed)
    workers.start()
    try:
        server.run("stdio")
    finally:
        readers.close()


def label_on(root: Path, items: list[LabelInput]) -> LabelReport:
    """Labels committed on a fresh Warehouse of the store's latest version (Warehouse.label), then
    the new version's view catalog built (Warehouse.prepare): the readers read the
    newest version whose catalog is built (service/readers.py), so the next query sees the label."""
    from ..api import Warehouse

    wh = Warehouse(root)
    try:
        report = wh.label(items)
        if report.added:
            wh.prepare()
        return report
    finally:
        wh.close()


def _anyone(ctx: Context) -> None:
    """Over stdio, `--allow-labels` was the permission."""
