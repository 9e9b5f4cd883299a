"""`tracewh serve`: the warehouse over HTTP (FastAPI), read-only but for token-protected ingest.

Defences in depth: every query passes the service-mode guard (read-only statements, no
file or network functions, only the store's relations), and DuckDB itself runs with
external access off except for the store's own folder. View filters are bound as
parameters, never spliced into SQL. Ingest needs the bearer token the server was started
with (from configuration or the environment) and goes through the same atomic, validated
pipeline as the CLI.
"""

from __future__ import annotations

import hmac
import io
import re
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
from fastapi import Depends, FastAPI, File, Header, HTTPException, Query, Request, UploadFile
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel

from .. import __version__
from ..errors import BadInputError, QualityError, TracewhError
from ..queries.guard import QueryError, prepare_query
from ..queries.registry import load_views
from ..warehouse.api import Warehouse
from ..warehouse.sqltext import literal_list
from .traces import span_tree

SAFE_UPLOAD_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,200}$")
UPLOAD_SUFFIXES = (".zip", ".jsonl", ".jsonl.gz", ".json", ".ndjson")


@dataclass(frozen=True)
class ServiceConfig:
    warehouse: Path
    token: str | None = None  # ingest is refused when no token is configured
    row_cap: int = 10_000
    query_seconds: float = 10.0
    max_upload_bytes: int = 512 << 20


class SQLRequest(BaseModel):
    query: str
    dialect: str = "duckdb"


def create_app(config: ServiceConfig) -> FastAPI:
    app = FastAPI(title="tracewh", version=__version__,
                  description="LLM-agent benchmark traces as immutable events; metrics as SQL views.")

    def warehouse() -> Iterator[Warehouse]:
        """A fresh read connection per request (so new commits show), sandboxed to the store."""
        wh = Warehouse(config.warehouse)
        wh.con.execute(f"SET allowed_directories = {literal_list([f'{wh.store.table_path}/'])}")
        wh.con.execute("SET enable_external_access = false")
        try:
            yield wh
        finally:
            wh.close()

    @app.exception_handler(TracewhError)
    def tracewh_error(request: Request, error: TracewhError) -> JSONResponse:
        status = 400 if isinstance(error, QueryError) else 422 if isinstance(error, (BadInputError, QualityError)) else 500
        return JSONResponse({"error": type(error).__name__, "detail": str(error)}, status_code=status)

    @app.get("/health")
    def health(wh: Warehouse = Depends(warehouse)) -> dict[str, Any]:
        return {"status": "ok", "tracewh_version": __version__, "store_version": wh.version}

    @app.get("/views")
    def views(wh: Warehouse = Depends(warehouse)) -> list[dict[str, Any]]:
        return [{"name": v.name, "description": v.description, "columns": [{"name": n, "type": t} for n, t in v.columns]}
                for v in wh.views()]

    @app.get("/views/{name}")
    def view_rows(name: str, request: Request, limit: int = Query(100, ge=1), offset: int = Query(0, ge=0),
                  format: str = Query("json", pattern="^(json|csv|parquet)$"),  # noqa: A002
                  wh: Warehouse = Depends(warehouse)) -> Response:
        if name not in {v.name for v in load_views()}:
            raise HTTPException(404, f"no view named {name!r}; GET /views lists them")
        columns = wh.sql(f"select * from {name} limit 0").columns
        filters = {k: v for k, v in request.query_params.items() if k not in ("limit", "offset", "format")}
        unknown = sorted(set(filters) - set(columns))
        if unknown:
            raise HTTPException(400, f"unknown filter column(s) {unknown}; {name} has {columns}")
        where = " and ".join(f'CAST("{c}" AS VARCHAR) = ${i}' for i, c in enumerate(filters, start=1))
        params = list(filters.values()) + [min(limit, config.row_cap), offset]
        query = (f"select * from {name}" + (f" where {where}" if where else "")  # order by all: stable pages
                 + f" order by all limit ${len(filters) + 1} offset ${len(filters) + 2}")
        return _respond(run_limited(wh, query, params, config), format)

    @app.post("/sql")
    def sql(body: SQLRequest, wh: Warehouse = Depends(warehouse)) -> dict[str, Any]:
        query = prepare_query(body.query, body.dialect, service=True)
        table = run_limited(wh, f"select * from ({query}) limit {config.row_cap + 1}", None, config)
        truncated = table.num_rows > config.row_cap
        return {"columns": table.column_names, "rows": table.slice(0, config.row_cap).to_pylist(),
                "truncated": truncated}

    @app.get("/runs")
    def runs(limit: int = Query(100, ge=1), offset: int = Query(0, ge=0),
             wh: Warehouse = Depends(warehouse)) -> list[dict[str, Any]]:
        return run_limited(wh, "select * from runs order by run_id limit $1 offset $2",
                           [min(limit, config.row_cap), offset], config).to_pylist()

    @app.get("/runs/{run_id}")
    def run(run_id: str, wh: Warehouse = Depends(warehouse)) -> dict[str, Any]:
        rows = run_limited(wh, "select * from runs where run_id = $1", [run_id], config).to_pylist()
        if not rows:
            raise HTTPException(404, f"no run {run_id!r}")
        return rows[0]

    @app.get("/runs/{run_id}/tasks/{task_id:path}/trace")
    def trace(run_id: str, task_id: str, wh: Warehouse = Depends(warehouse)) -> dict[str, Any]:
        events = run_limited(wh, "select * exclude (payload), payload from events where run_id = $1 and task_id = $2 "
                                 "order by seq", [run_id, task_id], config).to_pylist()
        if not events:
            raise HTTPException(404, f"no events for task {task_id!r} of run {run_id!r}")
        return {"run_id": run_id, "task_id": task_id, "spans": span_tree(events)}

    @app.post("/ingest")
    def ingest(file: UploadFile = File(...), authorization: str | None = Header(None)) -> dict[str, Any]:
        _authorise(config, authorization)
        name = file.filename or ""
        if not SAFE_UPLOAD_NAME.match(name) or ".." in name or not name.lower().endswith(UPLOAD_SUFFIXES):
            raise HTTPException(400, f"refused file name {name!r}: a plain name ending in one of {UPLOAD_SUFFIXES}")
        with tempfile.TemporaryDirectory(prefix="tracewh-upload-") as folder:
            path = Path(folder) / name
            _save_upload(file, path, config.max_upload_bytes)
            report = Warehouse(config.warehouse).ingest([path])
        source = report.sources[0]
        return {"added": report.added, "duplicates": report.duplicates, "already_ingested": bool(report.already_ingested),
                "version": source.commit.version, "formats": sorted(set(source.adapters))}

    return app


def _authorise(config: ServiceConfig, authorization: str | None) -> None:
    if not config.token:
        raise HTTPException(403, "ingest is disabled: start the service with a token (TRACEWH_SERVICE_TOKEN)")
    scheme, _, given = (authorization or "").partition(" ")
    if scheme.lower() != "bearer" or not hmac.compare_digest(given.encode(), config.token.encode()):
        raise HTTPException(401, "a valid bearer token is required to ingest", headers={"WWW-Authenticate": "Bearer"})


def _save_upload(upload: UploadFile, path: Path, limit: int) -> None:
    """Stream the upload to disk, refusing it as soon as it passes the size limit."""
    written = 0
    with open(path, "wb") as out:
        while chunk := upload.file.read(1 << 20):
            written += len(chunk)
            if written > limit:
                raise HTTPException(413, f"upload larger than the {limit}-byte limit")
            out.write(chunk)


def run_limited(wh: Warehouse, query: str, params: list | None, config: ServiceConfig) -> pa.Table:
    """Run a query, interrupting it after the configured time limit."""
    wh.create_views(query)
    timer = threading.Timer(config.query_seconds, wh.con.interrupt)
    timer.start()
    try:
        return wh.con.sql(query, params=params or None).to_arrow_table()
    except duckdb.InterruptException:
        raise HTTPException(408, f"query stopped after {config.query_seconds:g} s") from None
    except (duckdb.CatalogException, duckdb.BinderException, duckdb.ParserException) as e:
        raise QueryError(str(e)) from None
    except duckdb.PermissionException as e:
        raise QueryError(f"refused by the engine: {e}") from None
    finally:
        timer.cancel()


def _respond(table: pa.Table, fmt: str) -> Response:
    if fmt == "parquet":
        sink = io.BytesIO()
        pq.write_table(table, sink)
        return Response(sink.getvalue(), media_type="application/vnd.apache.parquet")
    if fmt == "csv":
        import polars as pl

        return Response(pl.from_arrow(table).write_csv(), media_type="text/csv")  # type: ignore[union-attr]
    return JSONResponse(_jsonable(table.to_pylist()))


def _jsonable(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    from fastapi.encoders import jsonable_encoder

    return jsonable_encoder(rows)

