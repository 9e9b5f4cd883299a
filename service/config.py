"""What `tracewh serve` runs with (ServiceConfig) and its one bearer-token rule.

Here, below app.py, because app.py installs the OTLP receiver (otlp.py) and the web page (web/),
and both read the configuration and check the token as the JSON endpoints do: kept in app.py,
they would import the module that imports them.
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass, field
from pathlib import Path

from .upload import refusal

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1", "[::1]")


@dataclass(frozen=True)
class ServiceConfig:
    warehouse: Path
    token: str | None = None  # ingest is refused when no token is configured
    row_cap: int = 10_000
    query_seconds: float = 10.0
    max_upload_bytes: int = 512 << 20
    max_response_bytes: int = 64 << 20  # rows past this are cut (`truncated: true`)
    query_memory: str = "512MB"  # DuckDB memory per query connection
    running_queries: int = 4  # at once; more wait ...
    # ... up to this many (waiting holds no thread), the rest get 503 + Retry-After, as do those
    # that wait longer than query_seconds. 32 turned 50 clients of cheap queries into 503s.
    waiting_queries: int = 128
    allowed_hosts: tuple[str, ...] = field(default=LOOPBACK_NAMES)  # the Host header allow-list
    body_idle_seconds: float = 30.0  # an upload that stalls this long is dropped

    @staticmethod
    def allowed_hosts_default() -> tuple[str, ...]:
        return LOOPBACK_NAMES


def token_matches(config: ServiceConfig, given: str) -> bool:
    return bool(config.token) and hmac.compare_digest(given.encode(), config.token.encode())  # type: ignore[union-attr]


def authorise(config: ServiceConfig, authorization: str | None) -> None:
    """Let an ingest (POST /ingest, POST /v1/traces) through only with the bearer token; call it
    before reading the body."""
    if not config.token:
        raise refusal(403, "ingest is disabled: start the service with a token (TRACEWH_SERVICE_TOKEN)")
    scheme, _, given = (authorization or "").partition(" ")
    if scheme.lower() != "bearer" or not token_matches(config, given):
        raise refusal(401, "a valid bearer token is required to ingest", headers={"WWW-Authenticate": "Bearer"})
