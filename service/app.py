"""`tracewh serve`: the warehouse over HTTP (FastAPI), read-only but for token-protected ingest.

Every endpoint parses its input, calls one Warehouse method (api.py) and renders what comes
back: the same guard, views, row cap and time limit as the CLI and the Python API. The
service opens the store sandboxed (queries read the store's relations and files only).
Ingest needs the bearer token the server was started with and goes through the same atomic,
validated pipeline as the CLI. Errors become statuses in one place (service/errors.py).
"""

from __future__ import annotations

import hmac
import io
import re
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from fastapi import Depends, FastAPI, File, Header, HTTPException, Query, Request, UploadFile
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel

from ..api import Warehouse
from ..version import __version__
from .errors import install_error_handlers

SAFE_UPLOAD_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,200}$")
UPLOAD_SUFFIXES = (".zip", ".jsonl", ".jsonl.gz", ".json", ".ndjson")
RESERVED_PARAMS = ("limit", "offset", "format")


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
    install_error_handlers(app)
    limits = {"timeout_s": config.query_seconds}

    def warehouse() -> Iterator[Warehouse]:
        """A fresh, sandboxed read of the store per request (so new commits show)."""
        wh = Warehouse(config.warehouse, sandbox=True)
        try:
            yield wh
        finally:
            wh.close()

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
        filters = {k: v for k, v in request.query_params.items() if k not in RESERVED_PARAMS}
        result = wh.view(name, filters, limit=min(limit, config.row_cap), offset=offset, **limits)
        return _respond(result.table, format)

    @app.post("/sql")
    def sql(body: SQLRequest, wh: Warehouse = Depends(warehouse)) -> dict[str, Any]:
        result = wh.query(body.query, dialect=body.dialect, limit=config.row_cap, **limits)
        return {"columns": result.columns, "rows": _jsonable(result.table.to_pylist()), "truncated": result.truncated}

    @app.get("/runs")
    def runs(limit: int = Query(100, ge=1), offset: int = Query(0, ge=0),
             wh: Warehouse = Depends(warehouse)) -> list[dict[str, Any]]:
        return _jsonable(wh.runs(limit=min(limit, config.row_cap), offset=offset, **limits).table.to_pylist())

    @app.get("/runs/{run_id}")
    def run(run_id: str, wh: Warehouse = Depends(warehouse)) -> dict[str, Any]:
        return _jsonable(wh.run(run_id, **limits))

    @app.get("/runs/{run_id}/tasks/{task_id:path}/trace")
    def trace(run_id: str, task_id: str, wh: Warehouse = Depends(warehouse)) -> dict[str, Any]:
        spans = wh.trace(run_id, task_id, limit=config.row_cap, **limits)
        return {"run_id": run_id, "task_id": task_id, "spans": _jsonable(spans)}

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


def _respond(table: pa.Table, fmt: str) -> Response:
    if fmt == "parquet":
        sink = io.BytesIO()
        pq.write_table(table, sink)
        return Response(sink.getvalue(), media_type="application/vnd.apache.parquet")
    if fmt == "csv":
        import polars as pl

        return Response(pl.from_arrow(table).write_csv(), media_type="text/csv")  # type: ignore[union-attr]
    return JSONResponse(_jsonable(table.to_pylist()))


def _jsonable(value: Any) -> Any:
    from fastapi.encoders import jsonable_encoder

    return jsonable_encoder(value)
