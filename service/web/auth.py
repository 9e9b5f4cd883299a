"""Signing in to the page when the service has a token (TRACEWH_SERVICE_TOKEN).

The page asks for the token once and keeps, in an HttpOnly, SameSite=Strict cookie, an HMAC
of it rather than the token itself: a leaked cookie opens the page but is no bearer token
for POST /ingest, and changing the token signs every browser out. Scripts and other sites
never see the cookie; `Authorization: Bearer <token>` works too (curl, scripts). Without a
token the page is open, as the rest of the service is; it listens on 127.0.0.1 by default.
"""

from __future__ import annotations

import hashlib
import hmac

from fastapi import Request

from ..config import ServiceConfig, token_matches

COOKIE = "tracewh_session"
SIGN_IN_PATH = "/ui/login"
COOKIE_DAYS = 30


class SignInRequired(Exception):
    """Raised by `require_sign_in`; the web's error handler answers with the sign-in page."""


def session_value(token: str) -> str:
    return hmac.new(token.encode(), b"tracewh web session", hashlib.sha256).hexdigest()


def signed_in(request: Request, config: ServiceConfig) -> bool:
    if not config.token:
        return True
    cookie = request.cookies.get(COOKIE, "")
    if hmac.compare_digest(cookie.encode(), session_value(config.token).encode()):
        return True
    scheme, _, given = request.headers.get("Authorization", "").partition(" ")
    return scheme.lower() == "bearer" and token_matches(config, given)


def safe_next(path: str | None) -> str:
    """Where to go after signing in: a path on this server only (never another site)."""
    if not path or not path.startswith("/") or path.startswith(("//", "/\\")):
        return "/"
    return path


def request_path(request: Request) -> str:
    return request.url.path + (f"?{request.url.query}" if request.url.query else "")


def set_session(response, config: ServiceConfig, request: Request) -> None:  # noqa: ANN001 - a Starlette Response
    response.set_cookie(COOKIE, session_value(config.token or ""), max_age=COOKIE_DAYS * 86400, path="/",
                        httponly=True, samesite="strict", secure=request.url.scheme == "https")


def clear_session(response) -> None:  # noqa: ANN001
    response.delete_cookie(COOKIE, path="/", httponly=True, samesite="strict")
