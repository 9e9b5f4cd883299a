"""`tracewh serve`: the warehouse over HTTP (FastAPI), read-only but for token-protected ingest.

Every endpoint parses its input, calls one Warehouse method (api.py) and renders what comes
back: the same guard, views, row cap and time limit as the CLI and the Python API. The
service opens the store sandboxed (queries read the store's relations and files only).
With a token configured, every read needs it too (`/health` excepted) unless the service
runs with --public-read; ingest needs it always and goes through the same atomic,
validated pipeline as the CLI. Errors become statuses in one place (service/errors.py).
"""

from __future__ import annotations

import io
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import orjson
from fastapi import Depends, FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from pydantic import BaseModel, ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.middleware.trustedhost import TrustedHostMiddleware

from ..analytics.text import to_csv
from ..api import Warehouse
from ..errors import BadInputError, QueryTimeout
from ..ingest.judging.labels import LabelInput
from ..queries.engine import python_values
from ..queries.isolation import QueryWorkers
from ..version import __version__
from ..warehouse.layout import latest_version, resolve_root
from .compaction import Compactor
from .config import ServiceConfig, authorise, authorise_read
from .errors import install_error_handlers
from .gate import QueryGate
from .label_spool import LabelSpool
from .mcp_http import install_mcp
from .readers import Readers
from .otlp import install_otlp
from .upload import receive_body, receive_file
from .web import install_web

UPLOAD_SUFFIXES = (".zip", ".jsonl", ".jsonl.gz", ".json", ".ndjson")
RESERVED_PARAMS = ("limit", "offset", "format")
MAX_OFFSET = 1 << 62
T = TypeVar("T")


class SQLRequest(BaseModel):
    query: str
    dialect: str = "duckdb"


def create_app(config: ServiceConfig) -> FastAPI:
    app = FastAPI(title="tracewh", version=__version__,
                  description="LLM-agent benchmark traces as immutable events; metrics as SQL views.")
    root = resolve_root(config.warehouse)
    # DNS rebinding: a web page must not reach this server through a name it does not answer to.
    app.add_middleware(TrustedHostMiddleware, allowed_hosts=list(config.allowed_hosts))
    install_error_handlers(app, hidden_paths=[root])
    gate = QueryGate(config.running_queries, config.waiting_queries, config.query_seconds)
    app.state.query_gate = gate
    limits = {"timeout_s": config.query_seconds}

    def read_allowed(request: Request) -> None:
        """The token rule for reads (config.py), checked before a byte of a body is read."""
        authorise_read(config, request.headers.get("authorization"))

    guarded = [Depends(read_allowed)]

    def opened() -> Warehouse:
        """A fresh, sandboxed read of the store (so new commits show), with the service's memory limit."""
        return Warehouse(root, sandbox=True, memory_limit=config.query_memory)

    def warehouse() -> Iterator[Warehouse]:
        """The same, as a FastAPI dependency."""
        wh = opened()
        try:
            yield wh
        finally:
            wh.close()

    # Kept open between requests; queries run in worker processes with a memory ceiling (queries/isolation.py).
    workers = QueryWorkers(config.running_queries, config.query_process_memory, config.query_temp_bytes,
                           cache_bytes=config.result_cache_bytes)
    readers = Readers(root, config.query_memory, keep=config.running_queries, isolation=workers)
    app.state.query_workers = workers
    app.router.on_startup.append(workers.start)
    app.router.on_shutdown.append(readers.close)

    async def reading(work: Callable[[Warehouse], T]) -> T:
        """`work` on a read of the store's latest version, in a worker thread once the gate lets it run."""
        return await gate.run(readers.read, work)

    @app.get("/health")
    async def health() -> dict[str, Any]:  # no thread, no store opened: fast while queries queue
        # ingest_ready: the OTLP commit process has loaded (about 1 s after the start), so a request is
        # committed at once; one sent before waits for it (a deployment's readiness probe waits instead)
        return {"status": "ok", "tracewh_version": __version__, "store_version": latest_version(root / "events"),
                "ingest_ready": app.state.otlp_committer.ready.is_set()}

    @app.get("/views", dependencies=guarded)
    async def views() -> list[dict[str, Any]]:
        return await reading(lambda wh: [{"name": v.name, "description": v.description,
                                          "columns": [{"name": n, "type": t} for n, t in v.columns]}
                                         for v in wh.views()])

    @app.get("/views/{name}", dependencies=guarded)
    async def view_rows(name: str, request: Request, limit: int = Query(100, ge=1),
                        offset: int = Query(0, ge=0, le=MAX_OFFSET),
                        format: str = Query("json", pattern="^(json|csv|parquet)$")) -> Response:  # noqa: A002
        filters = {k: v for k, v in request.query_params.items() if k not in RESERVED_PARAMS}
        deadline = time.monotonic() + config.query_seconds
        return await reading(lambda wh: _respond(wh.view(name, filters, limit=min(limit, config.row_cap), offset=offset,
                                                         max_bytes=config.max_response_bytes, **limits).table,
                                                 format, deadline))

    @app.post("/sql", dependencies=guarded, openapi_extra=SQL_SCHEMA)
    async def sql(request: Request) -> Response:
        body = await _sql_request(request, config)
        deadline = time.monotonic() + config.query_seconds

        def work(wh: Warehouse) -> Response:
            result = wh.query(body.query, dialect=body.dialect, limit=config.row_cap,
                              max_bytes=config.max_response_bytes, **limits)
            return _json({"columns": result.columns, "rows": _rows(result.table, deadline),
                          "truncated": result.truncated})

        return await reading(work)

    @app.get("/runs", dependencies=guarded)
    async def runs(limit: int = Query(100, ge=1), offset: int = Query(0, ge=0, le=MAX_OFFSET)) -> Response:
        deadline = time.monotonic() + config.query_seconds
        return await reading(lambda wh: _json(_rows(wh.runs(limit=min(limit, config.row_cap), offset=offset,
                                                            **limits).table, deadline)))

    @app.get("/runs/{run_id}", dependencies=guarded)
    async def run(run_id: str) -> Response:
        return await reading(lambda wh: _json(wh.run(run_id, **limits)))

    @app.get("/runs/{run_id}/tasks/{task_id:path}/trace", dependencies=guarded)
    async def trace(run_id: str, task_id: str) -> Response:
        return await reading(lambda wh: _json({"run_id": run_id, "task_id": task_id,
                                               "spans": wh.trace(run_id, task_id, limit=config.row_cap, **limits)}))

    @app.post("/ingest", openapi_extra=UPLOAD_SCHEMA)
    async def ingest(request: Request) -> dict[str, Any]:
        authorise(config, request.headers.get("authorization"))  # before a byte of the body is read
        with tempfile.TemporaryDirectory(prefix="tracewh-upload-") as folder:
            path = await receive_file(request, Path(folder), config.max_upload_bytes, config.body_idle_seconds,
                                      UPLOAD_SUFFIXES)
            # Staged in this request's thread (workers=1): concurrent requests share the cores, and a
            # server's threads are no process to fork workers from (ingest/workers.py).
            report = await run_in_threadpool(_ingest, root, path)
        source = report.sources[0]
        return {"added": report.added, "duplicates": report.duplicates, "already_ingested": bool(report.already_ingested),
                "version": source.commit.version, "formats": sorted(set(source.adapters))}

    compactor = Compactor(config.compact_files, config.compact_interval_seconds)  # the committers' small files
    label_spool = LabelSpool(root, compactor)  # labels answered once fsynced, committed in the background
    app.state.label_spool = label_spool
    app.router.on_startup.append(label_spool.start)  # and what a killed service spooled is committed first
    app.router.on_shutdown.append(label_spool.close)

    @app.post("/labels", openapi_extra=LABELS_SCHEMA)
    async def labels(request: Request) -> dict[str, Any]:
        """People's labels (docs/judging.md): behind the ingest token; answered once durably spooled,
        queryable a moment later (service/label_spool.py)."""
        authorise(config, request.headers.get("authorization"))  # before a byte of the body is read
        items = _label_items(await receive_body(request, config.max_sql_body_bytes, config.body_idle_seconds))
        report = await run_in_threadpool(label_spool.accept, items)
        return {"added": report.added, "superseded": report.superseded, "unchanged": report.unchanged}

    install_otlp(app, config, compactor)  # POST /v1/traces: OTLP/HTTP traces in, group-committed (service/otlp.py)
    readers.builders.append(app.state.otlp_committer.building_soon)
    install_web(app, config, reading)  # the web page at / (service/web/): this app, its gate and Warehouse
    install_mcp(app, config, reading)  # /mcp: MCP over streamable HTTP, reads through the same gate (mcp_http.py)
    return app


def _ingest(root: Path, path: Path) -> Any:
    """Ingest one upload, then build the new version's catalog: what the answer reports is in what
    the next request reads (service/readers.py)."""
    wh = Warehouse(root)
    try:
        report = wh.ingest([path], workers=1)
        wh.prepare()
        return report
    finally:
        wh.close()


async def _sql_request(request: Request, config: ServiceConfig) -> SQLRequest:
    """POST /sql's JSON body, read with the uploads' size limit and idle timeout (a body
    trickled a byte at a time would otherwise hold its connection for ever). Like FastAPI's
    own parsing, only a JSON content type (or none) is read as JSON: a plain cross-site form
    cannot send one."""
    raw = await receive_body(request, config.max_sql_body_bytes, config.body_idle_seconds)
    media = request.headers.get("content-type", "application/json").split(";")[0].strip().lower()
    if not (media == "application/json" or (media.startswith("application/") and media.endswith("+json"))):
        raise RequestValidationError([{"type": "content_type", "loc": ("body",), "input": media,
                                       "msg": "send the query as JSON (Content-Type: application/json)"}])
    try:
        return SQLRequest.model_validate_json(raw)
    except ValidationError as e:
        raise RequestValidationError([{**error, "loc": ("body", *error["loc"])} for error in e.errors()]) from None


def _label_items(raw: bytes) -> list[LabelInput]:
    """POST /labels' body: one label object or a list of them. The shape is checked here (422,
    naming the item and field); what a label says, by Warehouse.label (one line, 422)."""
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError as e:
        raise BadInputError("POST /labels", f"the body is not JSON: {e}") from None
    records = body if isinstance(body, list) else [body]
    items = []
    for number, record in enumerate(records, start=1):
        if not isinstance(record, dict):
            raise BadInputError(f"POST /labels, item {number}", f"a label is a JSON object ({', '.join(LABEL_FIELDS)})")
        if unknown := sorted(set(record) - set(LABEL_FIELDS)):
            raise BadInputError(f"POST /labels, item {number}", f"unknown field; a label has {', '.join(LABEL_FIELDS)}",
                                field=unknown[0])
        items.append(LabelInput(**{k: record.get(k) for k in LABEL_FIELDS}, file=f"POST /labels, item {number}"))
    if not items:
        raise BadInputError("POST /labels", "no labels in the body")
    return items


def _rows(table: Any, deadline: float) -> list[dict[str, Any]]:
    """The table's rows as dicts, converted a slice at a time within the query's deadline (the time
    limit covers serialisation too)."""
    rows: list[dict[str, Any]] = []
    for batch in table.to_batches(max_chunksize=2048):
        if time.monotonic() > deadline:
            raise QueryTimeout("query stopped at its time limit while its rows were being sent")
        with python_values():  # 'infinity'::date and the like: a 400 saying so, not a 500
            rows += batch.to_pylist()
    return rows


def _json(content: Any) -> Response:
    return Response(orjson.dumps(content, default=_json_default, option=orjson.OPT_NON_STR_KEYS),
                    media_type="application/json")


def _json_default(value: Any) -> Any:
    """What orjson does not write itself: decimals as numbers, bytes as hex, the rest as text."""
    from decimal import Decimal

    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return "\\x" + bytes(value).hex()
    return str(value)


def _respond(table: Any, fmt: str, deadline: float) -> Response:
    if fmt == "parquet":
        import pyarrow.parquet as pq

        sink = io.BytesIO()
        pq.write_table(table, sink)
        return Response(sink.getvalue(), media_type="application/vnd.apache.parquet")
    if fmt == "csv":
        rows = [tuple(row.values()) for row in _rows(table, deadline)]
        return Response(to_csv(table.column_names, rows), media_type="text/csv")
    return _json(_rows(table, deadline))


SQL_SCHEMA = {"requestBody": {"required": True, "content": {"application/json": {
    "schema": SQLRequest.model_json_schema()}}}}
LABEL_FIELDS = ("rubric", "target_id", "annotator", "label", "score", "note")
_LABEL = {"type": "object", "required": ["rubric", "target_id", "annotator"], "additionalProperties": False,
          "properties": {"rubric": {"type": "string"}, "target_id": {"type": "string"}, "annotator": {"type": "string"},
                         "label": {"type": "string", "description": "a label of the rubric's label set (or give score)"},
                         "score": {"type": "number", "description": "a score on the rubric's scale (or give label)"},
                         "note": {"type": "string"}}}
LABELS_SCHEMA = {"requestBody": {"required": True, "content": {"application/json": {
    "schema": {"oneOf": [_LABEL, {"type": "array", "items": _LABEL}]}}}}}
UPLOAD_SCHEMA = {"requestBody": {"required": True, "content": {"multipart/form-data": {"schema": {
    "type": "object", "required": ["file"],
    "properties": {"file": {"type": "string", "format": "binary",
                            "description": f"a run archive or file ({', '.join(UPLOAD_SUFFIXES)})"}}}}}}}
