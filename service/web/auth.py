"""Signing in to the page when the service has a token (TRACEWH_SERVICE_TOKEN).

The page asks for the token once and keeps, in an HttpOnly, SameSite=Strict cookie, an HMAC
of it rather than the token itself: a leaked cookie opens the page but is no bearer token
for POST /ingest, and changing the token signs every browser out. Scripts and other sites
never see the cookie; `Authorization: Bearer <token>` works too (curl, scripts). Without a
token, or with --public-read, the page is open, as the service's other reads are; it listens
on 127.0.0.1 by default.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import unicodedata
from urllib.parse import unquote, urlsplit

from fastapi import HTTPException, Request

from ..config import ServiceConfig, bearer_matches, reads_open

COOKIE = "tracewh_session"
SIGN_IN_PATH = "/ui/login"
COOKIE_DAYS = 30


class SignInRequired(Exception):
    """Raised by `require_sign_in`; the web's error handler answers with the sign-in page."""


def session_value(token: str) -> str:
    return hmac.new(token.encode(), b"tracewh web session", hashlib.sha256).hexdigest()


def signed_in(request: Request, config: ServiceConfig) -> bool:
    """The service's one token rule (config.py), with the page's cookie as well as the bearer token."""
    if reads_open(config):
        return True
    cookie = request.cookies.get(COOKIE, "")
    if hmac.compare_digest(cookie.encode(), session_value(config.token or "").encode()):
        return True
    return bearer_matches(config, request.headers.get("Authorization"))


def safe_next(path: str | None) -> str:
    """Where to go after signing in: a path on this server only (never another site), else "/".

    A browser resolving a link drops tabs and newlines anywhere, reads backslashes as slashes
    and may decode `%2f`/`%5c`, so `/%09/evil`, `/\\evil` or `%2f%2fevil` lead off-site although
    they start with one "/". So: no whitespace or control character at all, no scheme and no
    host as urllib parses it, and the path part, percent-decoded, is "/" followed by neither
    a slash nor a backslash, and holds no backslash, whitespace or control character.
    """
    if not path or any(_unsafe_char(c) for c in path):
        return "/"
    parts = urlsplit(path)
    decoded = unquote(parts.path)
    if parts.scheme or parts.netloc or not SAME_ORIGIN_PATH.fullmatch(decoded) or any(_unsafe_char(c) for c in decoded):
        return "/"
    return path


SAME_ORIGIN_PATH = re.compile(r"/(?:[^/\\][^\\]*)?", re.DOTALL)


def _unsafe_char(c: str) -> bool:
    return c.isspace() or unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp")


def refuse_cross_site(request: Request) -> None:
    """Refuse (403) a request another site's page made a browser send: what runs a query or
    downloads its rows is a POST from this server's own pages. Browsers say where a request
    comes from (Sec-Fetch-Site, else Origin); a client that sends neither is no browser, so
    no other site is speaking through it. Another port of the same host is another origin."""
    site = request.headers.get("sec-fetch-site")  # the browser's own word; Origin only for older browsers
    origin = request.headers.get("origin")
    own = f"{request.url.scheme}://{request.headers.get('host', '')}"
    if site is not None and site not in ("same-origin", "none") or site is None and origin not in (None, own):
        raise HTTPException(403, "refused: this request came from another site's page; run queries from this "
                                 "server's SQL editor")


def request_path(request: Request) -> str:
    return request.url.path + (f"?{request.url.query}" if request.url.query else "")


def set_session(response, config: ServiceConfig, request: Request) -> None:  # noqa: ANN001 - a Starlette Response
    response.set_cookie(COOKIE, session_value(config.token or ""), max_age=COOKIE_DAYS * 86400, path="/",
                        httponly=True, samesite="strict", secure=request.url.scheme == "https")


def clear_session(response) -> None:  # noqa: ANN001
    response.delete_cookie(COOKIE, path="/", httponly=True, samesite="strict")
