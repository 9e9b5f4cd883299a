"""The web page of `tracewh serve`, at `/`: runs, traces, views, figures, SQL and the store.

Server-rendered HTML (Jinja2, templates/), with htmx where part of a page loads by itself
(more rows of a trace, an event's payload, a figure, the check report). Each route parses
its input and hands the service's `reading` a function that calls Warehouse methods
(api.py) and renders what they return: the work runs where the JSON endpoints' runs (the
service's query gate, its sandboxed per-request Warehouse, row cap, byte cap and time
limit), so the guard, limits and errors are theirs. The routes live on the service's app,
under its middleware (Host allow-list). Errors become pages in one place (errors.py here).
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Awaitable, Callable
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

import orjson
from fastapi import APIRouter, Depends, FastAPI, Form, Query, Request
from fastapi.responses import RedirectResponse, Response
from fastapi.staticfiles import StaticFiles

from ...errors import NotFoundError, UsageError
from ..config import ServiceConfig, reads_open, token_matches
from .auth import SignInRequired, clear_session, refuse_cross_site, safe_next, set_session, signed_in
from .compare import compare_link, compare_routes
from .errors import install_error_pages
from .figures import BY_KIND, FIGURES, FORMATS, figure_bytes
from ..gate import Reading
from .payloads import envelope, sections
from .queue import queue_routes
from .render import STATIC, download, page, table_bytes, url, when
from .trace_rows import BAR_WIDTH, by_sequence, event_count, time_window, trace_rows

if TYPE_CHECKING:
    from ...api import Warehouse


RUNS_PER_PAGE = 50
TASKS_PER_PAGE = 100
VIEW_ROWS_PER_PAGE = 100
TRACE_ROWS_PER_PAGE = 500
SQL_ROWS_SHOWN = 500
QUARANTINE_ROWS_SHOWN = 200
FILTER_PREFIX = "f."  # view filters: f.<column>=<value> (plain names could clash with page parameters)
DIALECTS = ("duckdb", "postgres", "mysql", "sqlite", "spark", "databricks", "trino", "bigquery", "snowflake")
RUN_SORT_COLUMNS = ("run_id", "benchmark", "model", "attrs", "n_events", "n_tasks", "total_tokens", "cost_usd",
                    "first_ts", "last_ts", "score")
RUN_FACETS = ("with r as materialized (select benchmark, model, attrs from runs) "
              "select 'benchmark' as facet, benchmark as value from r union "
              "select 'model', model from r union "
              "select 'attribute', unnest(json_keys(attrs)) from r order by 1, 2")


def install_web(app: FastAPI, config: ServiceConfig, reading: Reading) -> None:
    """Add the page to the service's app; `reading` runs work on the service's Warehouse, as its endpoints do."""
    router = APIRouter(include_in_schema=False, dependencies=[Depends(_sign_in_check(config))])
    for add in (_browse_routes, _view_routes, _figure_routes, _sql_routes, _store_routes, queue_routes, compare_routes):
        add(router, config, reading)
    app.include_router(router)
    app.include_router(_sign_in_routes(config))
    app.mount("/ui/static", StaticFiles(directory=STATIC), name="tracewh-static")
    install_error_pages(app)


def _sign_in_check(config: ServiceConfig) -> Callable[[Request], Awaitable[None]]:
    async def check(request: Request) -> None:
        request.state.sign_in_on = not reads_open(config)
        if not signed_in(request, config):
            raise SignInRequired()

    return check


def _limits(config: ServiceConfig) -> dict[str, Any]:
    return {"timeout_s": config.query_seconds}


def _capped(config: ServiceConfig) -> dict[str, Any]:
    """Limits of a query whose rows go out whole (tables, downloads): the JSON endpoints' caps."""
    return {"timeout_s": config.query_seconds, "max_bytes": config.max_response_bytes}


# -- runs, a run, a trace, an event ---------------------------------------------------------

def _browse_routes(router: APIRouter, config: ServiceConfig, reading: Reading) -> None:
    limits = _limits(config)

    @router.get("/")
    async def runs_page(request: Request, benchmark: str = "", model: str = "", attr: list[str] = Query([]),
                        sort: str = "last_ts", desc: bool = True,
                        number: int = Query(1, ge=1, le=1 << 40, alias="page")) -> Response:
        filters = {k: v for k, v in (("benchmark", benchmark), ("model", model)) if v}
        attr = [a for a in attr if a.strip()]  # a browser submits the attribute box even when it is empty
        state = [("benchmark", benchmark), ("model", model), *(("attr", a) for a in attr), ("sort", sort),
                 ("desc", "true" if desc else "false")]

        def work(wh: Warehouse) -> Response:
            shown = wh.runs(filters, attrs=_attr_filters(attr), order_by=sort, descending=desc, limit=RUNS_PER_PAGE,
                            offset=(number - 1) * RUNS_PER_PAGE, **limits)
            facets = wh.query(RUN_FACETS, limit=config.row_cap, **limits).tuples()
            return page(request, "runs.html", section="runs", runs=[_run_row(r) for r in shown.table.to_pylist()],
                        facets={k: [v for f, v in facets if f == k and v is not None]
                                for k in ("benchmark", "model", "attribute")},
                        benchmark=benchmark, model=model, attrs=attr, sort=sort, desc=desc,
                        sort_links=_sort_links(state, sort, desc), pages=_pager("/", state, number, shown.truncated))

        return await reading(work)

    @router.get("/ui/run")
    async def run_page(request: Request, run: str, number: int = Query(1, ge=1, le=1 << 40, alias="page")) -> Response:
        def work(wh: Warehouse) -> Response:
            summary = _run_row(wh.run(run, **limits))
            tasks = wh.tasks(run, limit=TASKS_PER_PAGE, offset=(number - 1) * TASKS_PER_PAGE, **limits)
            return page(request, "run.html", section="runs", run=summary, tasks=tasks.table.to_pylist(),
                        pages=_pager("/ui/run", [("run", run)], number, tasks.truncated))

        return await reading(work)

    @router.get("/ui/trace")
    async def trace_page(request: Request, run: str, task: str) -> Response:
        def work(wh: Warehouse) -> Response:
            rows = trace_rows(wh.trace(run, task, limit=config.row_cap, **limits))
            ordered = by_sequence(rows)  # the timestamps disagree: no time axis to speak of
            window = None if ordered else time_window(rows)
            start = datetime.fromtimestamp(window[0], timezone.utc) if window else None
            return page(request, "trace.html", section="runs", run_id=run, task=task, window=window,
                        window_start=when(start), by_sequence=ordered, events=event_count(rows),
                        **_trace_page_of(rows, run, task, 0))

        return await reading(work)

    @router.get("/ui/trace/rows")
    async def trace_more_rows(request: Request, run: str, task: str, offset: int = Query(0, ge=0)) -> Response:
        def work(wh: Warehouse) -> Response:
            rows = trace_rows(wh.trace(run, task, limit=config.row_cap, **limits))
            return page(request, "_trace_rows.html", **_trace_page_of(rows, run, task, offset))

        return await reading(work)

    @router.get("/ui/event")
    async def event_fragment(request: Request, run: str, event: str) -> Response:
        def work(wh: Warehouse) -> Response:
            found = wh.event(run, event, **limits)
            return page(request, "_event.html", event=found, envelope=envelope(found), sections=sections(found))

        return await reading(work)


def _attr_filters(pairs: list[str]) -> dict[str, str]:
    attrs = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise UsageError(f"attribute filter {pair!r} is not key=value")
        attrs[key] = value
    return attrs


def _run_row(row: dict[str, Any]) -> dict[str, Any]:
    """A run as the page shows it: its attributes parsed (they come as JSON text)."""
    attrs = row.get("attrs")
    parsed = orjson.loads(attrs) if isinstance(attrs, str) and attrs else attrs or {}
    return row | {"attrs": parsed if isinstance(parsed, dict) else {}}


def _sort_links(state: list[tuple[str, str]], sort: str, desc: bool) -> dict[str, str]:
    """Per column: the URL sorting by it, descending when it is already sorted ascending."""
    kept = [(k, v) for k, v in state if k not in ("sort", "desc")]
    return {c: url("/", [*kept, ("sort", c), ("desc", "true" if c == sort and not desc else "false")])
            for c in RUN_SORT_COLUMNS}


def _pager(path: str, state: list[tuple[str, str]], number: int, more: bool) -> dict[str, Any]:
    kept = [(k, v) for k, v in state if k != "page"]
    return {"number": number, "previous": url(path, [*kept, ("page", number - 1)]) if number > 1 else None,
            "next": url(path, [*kept, ("page", number + 1)]) if more else None}


def _trace_page_of(rows: list, run: str, task: str, offset: int) -> dict[str, Any]:
    end = offset + TRACE_ROWS_PER_PAGE
    more = url("/ui/trace/rows", run=run, task=task, offset=end) if end < len(rows) else None
    return {"rows": rows[offset:end], "total": len(rows), "more_url": more, "bar_width": int(BAR_WIDTH),
            "events_url": url("/ui/event", run=run)}


# -- views -------------------------------------------------------------------------------------

def _view_routes(router: APIRouter, config: ServiceConfig, reading: Reading) -> None:
    capped = _capped(config)

    @router.get("/ui/views")
    async def views_page(request: Request) -> Response:
        def work(wh: Warehouse) -> Response:
            groups: dict[str, list] = {}
            for view in wh.views():
                groups.setdefault(view.group, []).append(view)
            return page(request, "views.html", section="views", groups=groups)

        return await reading(work)

    @router.get("/ui/views/{name}")
    async def view_page(request: Request, name: str, number: int = Query(1, ge=1, le=1 << 40, alias="page")) -> Response:
        filters = _view_filters(request)
        state = [(FILTER_PREFIX + k, v) for k, v in filters.items()]

        def work(wh: Warehouse) -> Response:
            shown = wh.view(name, filters, limit=VIEW_ROWS_PER_PAGE, offset=(number - 1) * VIEW_ROWS_PER_PAGE, **capped)
            info = next(v for v in wh.views() if v.name == name)
            return page(request, "view.html", section="views", view=info, filters=filters, columns=shown.columns,
                        rows=shown.tuples(), pages=_pager(f"/ui/views/{name}", state, number, shown.truncated),
                        compare=compare_link(info),
                        downloads={f: url(f"/ui/views/{name}/download", [*state, ("format", f)])
                                   for f in ("csv", "parquet")})

        return await reading(work)

    @router.get("/ui/views/{name}/download")
    async def view_download(request: Request, name: str,
                            fmt: str = Query("csv", alias="format", pattern="^(csv|parquet)$")) -> Response:
        filters = _view_filters(request)

        def work(wh: Warehouse) -> Response:
            result = wh.view(name, filters, limit=config.row_cap, offset=0, **capped)
            return download(table_bytes(result, fmt), name, fmt)  # name: a view's, as wh.view found it

        return await reading(work)


def _view_filters(request: Request) -> dict[str, str]:
    """f.<column>=<value> parameters; empty values are no filter (an empty filter box)."""
    return {k[len(FILTER_PREFIX):]: v for k, v in request.query_params.items() if k.startswith(FILTER_PREFIX) and v}


# -- figures -----------------------------------------------------------------------------------

def _figure_routes(router: APIRouter, config: ServiceConfig, reading: Reading) -> None:
    # Figures are drawn one at a time (figures.py); waiting for that happens here, before the
    # gate, so figures queued behind each other hold no query slot that other pages need.
    drawing = asyncio.Lock()

    async def drawn(kind: str, fmt: str) -> bytes:
        if kind not in BY_KIND:
            raise NotFoundError(f"no figure {kind!r}; the figures are {', '.join(BY_KIND)}")
        async with drawing:
            return await reading(lambda wh: figure_bytes(wh, kind, fmt))

    @router.get("/ui/figures")
    async def figures_page(request: Request) -> Response:
        return page(request, "figures.html", section="figures", figures=FIGURES, formats=FORMATS)

    @router.get("/ui/figures/{kind}")
    async def figure_fragment(request: Request, kind: str) -> Response:
        svg = await drawn(kind, "svg")
        return page(request, "_figure.html", figure=BY_KIND[kind],
                    source="data:image/svg+xml;base64," + base64.b64encode(svg).decode())

    @router.get("/ui/figures/{kind}/download")
    async def figure_download(kind: str, fmt: str = Query("svg", alias="format", pattern="^(svg|png|pdf)$")) -> Response:
        return download(await drawn(kind, fmt), kind, fmt)  # kind: one of BY_KIND


# -- SQL ---------------------------------------------------------------------------------------

def _sql_routes(router: APIRouter, config: ServiceConfig, reading: Reading) -> None:
    capped = _capped(config)

    @router.get("/ui/sql")
    async def sql_page(request: Request, q: str = "", dialect: str = "duckdb") -> Response:
        """The editor, pre-filled by a shared link's `q`: a GET never runs a query (another site could send one)."""
        return page(request, "sql.html", **_sql_context(config, q, dialect))

    @router.post("/ui/sql")
    async def sql_run(request: Request, q: str = Form(""), dialect: str = Form("duckdb")) -> Response:
        refuse_cross_site(request)
        context = _sql_context(config, q, dialect)
        request.state.error_page = ("sql.html", context)  # a refused query is shown beside the editor
        if not q.strip():
            return page(request, "sql.html", **context)

        def work(wh: Warehouse) -> Response:
            result = wh.query(q, dialect=dialect, limit=config.row_cap, **capped)
            return page(request, "sql.html", **context | {"result": result})

        return await reading(work)

    @router.post("/ui/sql/download")
    async def sql_download(request: Request, q: str = Form(...), dialect: str = Form("duckdb"),
                           fmt: str = Form("csv", alias="format", pattern="^(csv|parquet)$")) -> Response:
        refuse_cross_site(request)

        def work(wh: Warehouse) -> Response:
            result = wh.query(q, dialect=dialect, limit=config.row_cap, **capped)
            return download(table_bytes(result, fmt), "query", fmt)

        return await reading(work)


def _sql_context(config: ServiceConfig, q: str, dialect: str) -> dict[str, Any]:
    return {"section": "sql", "q": q, "dialect": dialect, "dialects": DIALECTS, "row_cap": config.row_cap,
            "result": None, "shown": SQL_ROWS_SHOWN, "share": url("/ui/sql", q=q, dialect=dialect)}


# -- the store ---------------------------------------------------------------------------------

def _store_routes(router: APIRouter, config: ServiceConfig, reading: Reading) -> None:
    @router.get("/ui/store")
    async def store_page(request: Request) -> Response:
        def work(wh: Warehouse) -> Response:
            held = wh.quarantine()
            shown = held.slice(0, QUARANTINE_ROWS_SHOWN).select(["quarantined_at", "run_id", "kind", "source", "reasons"])
            return page(request, "store.html", section="store", version=wh.version, batches=list(reversed(wh.log())),
                        held=shown.to_pylist(), held_count=held.num_rows, row_cap=config.row_cap,
                        query_seconds=config.query_seconds)

        return await reading(work)

    @router.get("/ui/store/check")
    async def check_fragment(request: Request) -> Response:
        return await reading(lambda wh: page(request, "_check.html", check=wh.check().to_dict()))


# -- signing in --------------------------------------------------------------------------------

def _sign_in_routes(config: ServiceConfig) -> APIRouter:
    router = APIRouter(include_in_schema=False)

    @router.get("/ui/login")
    async def sign_in_page(request: Request, next_path: str = Query("/", alias="next")) -> Response:
        return page(request, "login.html", next=safe_next(next_path), wrong=False, token_set=bool(config.token))

    @router.post("/ui/login")
    async def sign_in(request: Request, token: str = Form(""), next_path: str = Form("/", alias="next")) -> Response:
        if config.token and not token_matches(config, token):
            return page(request, "login.html", 401, next=safe_next(next_path), wrong=True, token_set=True)
        response = RedirectResponse(safe_next(next_path), status_code=303)
        if config.token:
            set_session(response, config, request)
        return response

    @router.post("/ui/logout")
    async def sign_out() -> Response:
        response = RedirectResponse("/ui/login", status_code=303)
        clear_session(response)
        return response

    return router
