"""`tracewh mcp`: the store as an MCP server on stdio, for an assistant (Claude Desktop, Cursor,
...) to start and call (docs/mcp.md). Registered on the app by cli/app.py."""

from typing import Annotated

import typer

from .options import WarehouseOpt, open_warehouse


def mcp(
    warehouse: WarehouseOpt = None,
    allow_labels: Annotated[bool, typer.Option("--allow-labels", help="Offer the add_label tool: the assistant may "
                                               "record labels (judgment events) in the store. Off by default: over "
                                               "stdio no token is presented, so this flag is the permission "
                                               "(`tracewh serve` asks for the ingest token instead).")] = False,
    row_cap: Annotated[int, typer.Option(min=1, help="Most rows a query returns (as `tracewh serve`).")] = 10_000,
    query_seconds: Annotated[float, typer.Option(min=0.1, help="Time limit per query.")] = 10.0,
    max_response_mb: Annotated[int, typer.Option(min=1, help="Largest query answer; rows past it are cut and the "
                                                 "answer says so.")] = 64,
    query_process_mb: Annotated[int, typer.Option(min=256, help="Memory one query's worker process may reach; past "
                                                  "it the query is stopped (docs/reliability.md).")] = 1024,
    spill_mb: Annotated[int, typer.Option(min=0, help="Disk all running queries together may spill to.")] = 1024,
) -> None:
    """Serve the store to an assistant over MCP (stdio): views, read-only SQL, runs, traces, compare.

    Queries run with `tracewh serve`'s guard and limits, in worker processes. The client starts
    this command itself (see docs/mcp.md for Claude Desktop and Cursor); it speaks MCP on stdin
    and stdout until the client closes them. Over HTTP, `tracewh serve` offers the same at /mcp."""
    from ..service.config import ServiceConfig
    from ..service.mcp_server import serve_stdio

    store = open_warehouse(warehouse)
    store.require_store()  # a mistyped path fails here, in one line, not in every tool call
    config = ServiceConfig(store.path, row_cap=row_cap, query_seconds=query_seconds,
                           max_response_bytes=max_response_mb << 20, query_process_memory=query_process_mb << 20,
                           query_temp_bytes=spill_mb << 20)
    serve_stdio(config, allow_labels)
