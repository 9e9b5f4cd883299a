"""The one place service errors become HTTP statuses.

tracewh's errors carry their status (errors.py) and their message is the detail, with the
server's own paths taken out (the store's directory, upload folders): a client learns what
was wrong with its request, not where the server keeps things. Any other exception is a 500
whose detail says nothing of the server.
"""

from __future__ import annotations

import logging
import re
import tempfile
from collections.abc import Iterable
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from ..errors import TracewhError

log = logging.getLogger("tracewh.service")
UPLOAD_FOLDER = re.compile(re.escape(tempfile.gettempdir()) + r"/tracewh-upload-[^/\s]+/")


def install_error_handlers(app: FastAPI, hidden_paths: Iterable[Path] = ()) -> None:
    hidden = [(str(p), "<store>") for p in hidden_paths]

    @app.exception_handler(TracewhError)
    def tracewh_error(request: Request, error: TracewhError) -> JSONResponse:
        return JSONResponse({"error": type(error).__name__, "detail": redact(str(error), hidden)},
                            status_code=error.http_status)

    @app.exception_handler(Exception)
    def internal_error(request: Request, error: Exception) -> JSONResponse:
        log.exception("internal error on %s %s", request.method, request.url.path)
        return JSONResponse({"error": "InternalError", "detail": "internal error; the server log has the details"},
                            status_code=500)


def redact(message: str, hidden: list[tuple[str, str]]) -> str:
    """`message` without server paths: an upload's folder disappears (its file name stays)."""
    message = UPLOAD_FOLDER.sub("", message)
    for path, name in hidden:
        message = message.replace(path, name)
    return message
