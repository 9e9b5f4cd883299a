"""/mcp on `tracewh serve`: the MCP server (mcp_server.py) over streamable HTTP, under the
service's rules: the read token rule (config.authorise_read) before a byte of the body is
read, POST /sql's body size limit and idle timeout, the service's Host allow-list
(TrustedHostMiddleware), its query gate and readers for every read, and the ingest token
(config.authorise, as POST /labels) for the label tool, whose labels go where POST /labels'
go. Stateless JSON responses: each POST is one exchange, and the server holds no sessions.

The SDK costs 1-1.5 s to import (its protocol types are pydantic models of three protocol
versions), so the server is built in a thread while the service starts, and /mcp requests wait
for it: /health and the other endpoints answer at once.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextlib import asynccontextmanager
from functools import partial
from typing import TYPE_CHECKING, Any

from fastapi import HTTPException

from .config import ServiceConfig, authorise, authorise_read
from .upload import receive_body

if TYPE_CHECKING:
    from fastapi import FastAPI
    from mcp.server.mcpserver import Context, MCPServer
    from starlette.types import Receive, Scope, Send

    from .gate import Reading

log = logging.getLogger("tracewh.service")
STARTUP_S = 60.0  # a /mcp request waits at most this long for the server to be built


def install_mcp(app: FastAPI, config: ServiceConfig, reading: Reading) -> None:
    from ..warehouse.layout import resolve_root

    root = resolve_root(config.warehouse)
    # Labels as POST /labels records them: through the service's label spool when it has one.
    spool = getattr(app.state, "label_spool", None)
    endpoint = Endpoint(config, partial(_build, config, reading, root, spool.accept if spool is not None else None))
    app.add_route("/mcp", endpoint, include_in_schema=False)
    started = app.router.lifespan_context

    @asynccontextmanager
    async def lifespan(asgi: Any):  # noqa: ANN202 - the app's own lifespan, with the MCP server running beside it
        import anyio

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(endpoint.serve)
            async with started(asgi) as state:
                yield state
            tasks.cancel_scope.cancel()

    app.router.lifespan_context = lifespan


def _build(config: ServiceConfig, reading: Reading, root: Any, record: Callable | None) -> MCPServer:
    from .mcp_server import build_server, label_on

    return build_server(reading, config, record or partial(label_on, root), partial(_ingest_token, config),
                        hidden=[root])


class Endpoint:
    """/mcp: the read rule, the body's limits, then the SDK's session manager. An ASGI app, not a
    function: Starlette would take a function for a GET-only endpoint."""

    def __init__(self, config: ServiceConfig, build: Callable[[], MCPServer]):
        self.config, self.build = config, build
        self.server: MCPServer | None = None
        self.failed: str | None = None
        self._ready: Any = None  # an anyio.Event, made in the server's event loop

    @property
    def ready(self) -> Any:
        if self._ready is None:
            import anyio

            self._ready = anyio.Event()
        return self._ready

    async def serve(self) -> None:
        """Build the server (in a thread), then run its session manager until the app stops.
        A new session manager each time the app starts: one runs only once."""
        import anyio

        try:
            server = await anyio.to_thread.run_sync(self.build)
            from mcp.server.transport_security import TransportSecuritySettings

            # Host is checked by the service's TrustedHostMiddleware; the SDK still takes POSTs only
            # as application/json, which a cross-site page cannot send without the CORS preflight
            # this service never grants.
            unchecked = TransportSecuritySettings(enable_dns_rebinding_protection=False)
            server.streamable_http_app(stateless_http=True, json_response=True, transport_security=unchecked,
                                       max_request_body_size=self.config.max_sql_body_bytes)
        except Exception as error:  # noqa: BLE001 - /mcp says it is down; the rest of the service goes on
            log.exception("the MCP server did not start")
            self.failed = f"the MCP server did not start: {type(error).__name__}"
            self.ready.set()
            return
        async with server.session_manager.run():
            self.server = server
            self.ready.set()
            await anyio.sleep_forever()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        import anyio
        from starlette.requests import Request

        request = Request(scope, receive)
        authorise_read(self.config, request.headers.get("authorization"))  # before a byte of the body is read
        if request.method == "POST":
            body = await receive_body(request, self.config.max_sql_body_bytes, self.config.body_idle_seconds)
            receive = _replay(body, receive)
        with anyio.move_on_after(STARTUP_S):
            await self.ready.wait()
        if self.server is None:
            raise HTTPException(503, self.failed or "the MCP server is still starting; retry shortly",
                                headers={"Retry-After": "1"})
        await self.server.session_manager.handle_request(scope, receive, send)


def _ingest_token(config: ServiceConfig, ctx: Context) -> None:
    """The label tool's rule over HTTP: the ingest token on the request that calls it."""
    headers = ctx.headers or {}
    authorise(config, headers.get("authorization"))


def _replay(body: bytes, then: Receive) -> Receive:
    """An ASGI receive that hands over a body already read whole, then the connection's own
    messages (a disconnect)."""
    sent = False

    async def receive() -> Any:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await then()

    return receive
