"""The one place the web page's errors become pages.

The service's own handlers (service/errors.py, FastAPI's) decide an error's status and its
words; for the page's paths (`/` and `/ui/...`) their JSON answer is then shown as HTML, so
the page says exactly what POST /sql or GET /views would (a TracewhError's message is what
to do; a 500 says nothing about the server). Every other path keeps the JSON. A page that
shows errors in place (the SQL editor, beside the query) names its template and context in
`request.state.error_page`.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from http import HTTPStatus
from typing import Any

import orjson
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import RedirectResponse, Response
from starlette.exceptions import HTTPException

from ...errors import TracewhError
from .auth import SIGN_IN_PATH, SignInRequired, request_path
from .render import SECURITY_HEADERS, is_htmx, page, url

Handler = Callable[[Request, Exception], Any]
INTERNAL = {"error": "InternalError", "detail": "internal error; the server log has the details"}


def install_error_pages(app: FastAPI) -> None:
    for error_class in (TracewhError, HTTPException, RequestValidationError, Exception):
        app.add_exception_handler(error_class, _page_or(app.exception_handlers.get(error_class)))
    app.add_exception_handler(SignInRequired, _sign_in)


def is_web_path(path: str) -> bool:
    return path == "/" or path.startswith("/ui/")


def _page_or(service_handler: Handler | None) -> Callable[[Request, Exception], Awaitable[Response]]:
    async def handle(request: Request, error: Exception) -> Response:
        answer = None
        if service_handler is not None:
            answer = service_handler(request, error)
            answer = await answer if inspect.isawaitable(answer) else answer
        if not is_web_path(request.url.path) and answer is not None:
            return answer
        return error_page(request, *_shown(answer))

    return handle


def _shown(answer: Response | None) -> tuple[int, dict[str, str]]:
    """The status and the words of the service's answer."""
    if answer is None:
        return 500, INTERNAL
    try:
        body = orjson.loads(answer.body) if answer.body else {}
    except orjson.JSONDecodeError:
        body = {}
    detail = body.get("detail", "") if isinstance(body, dict) else ""
    if isinstance(detail, list):  # request validation: one entry per bad parameter
        detail = "; ".join(f"{'.'.join(map(str, d.get('loc', [])[1:]))}: {d.get('msg')}" for d in detail)
    title = body.get("error") if isinstance(body, dict) and body.get("error") else _phrase(answer.status_code)
    return answer.status_code, {"error": str(title), "detail": str(detail)}


def _phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Error"


def error_page(request: Request, status: int, words: dict[str, str]) -> Response:
    shown = {"status": status, "title": words["error"], "message": words["detail"]}
    template, context = getattr(request.state, "error_page", (None, {}))
    if template and not is_htmx(request):
        return page(request, template, status, **context, error=shown)
    return page(request, "_error.html" if is_htmx(request) else "error.html", status, error=shown)


def _sign_in(request: Request, error: Exception) -> Response:
    if is_htmx(request):  # a part of a page: htmx sends the whole window to the sign-in page
        return Response(status_code=401, headers=SECURITY_HEADERS | {"HX-Redirect": url(SIGN_IN_PATH)})
    if request.method == "GET":
        return RedirectResponse(url(SIGN_IN_PATH, next=request_path(request)), status_code=303, headers=SECURITY_HEADERS)
    return page(request, "error.html", 401, error={"status": 401, "title": "Sign in", "message": "sign in first"})
