"""The one place service errors become HTTP statuses.

tracewh's errors carry their status (errors.py) and their message is the detail; any other
exception is a 500 whose detail names no server path or internal state.
"""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from ..errors import TracewhError

log = logging.getLogger("tracewh.service")


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(TracewhError)
    def tracewh_error(request: Request, error: TracewhError) -> JSONResponse:
        return JSONResponse({"error": type(error).__name__, "detail": str(error)}, status_code=error.http_status)

    @app.exception_handler(Exception)
    def internal_error(request: Request, error: Exception) -> JSONResponse:
        log.exception("internal error on %s %s", request.method, request.url.path)
        return JSONResponse({"error": "InternalError", "detail": "internal error; the server log has the details"},
                            status_code=500)
