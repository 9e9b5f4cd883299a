"""What `tracewh serve` runs with (ServiceConfig) and its one bearer-token rule: with a token
configured, every read and every write needs it (`/health` excepted); `public_read` opens
reads; without a token, reads are open and ingest is off.

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
    # Queries run in `running_queries` worker processes (queries/isolation.py); one whose process
    # passes this many resident bytes is killed (DuckDB's memory_limit misses huge scalar values).
    # 4 x 1 GB + the server's own ~200 MB is the most the service holds.
    query_process_memory: int = 1 << 30
    query_temp_bytes: int = 1 << 30  # the most all queries together may spill to disk
    # Answers kept per store version, so a repeated query is not run again (queries/result_cache.py); 0: none.
    result_cache_bytes: int = 64 << 20
    running_queries: int = 4  # at once; more wait ...
    # ... up to this many (waiting holds no thread), the rest get 503 + Retry-After, as do those
    # that wait longer than query_seconds. 32 turned 50 clients of cheap queries into 503s.
    waiting_queries: int = 128
    allowed_hosts: tuple[str, ...] = field(default=LOOPBACK_NAMES)  # the Host header allow-list
    body_idle_seconds: float = 30.0  # an upload that stalls this long is dropped
    # With a token, every read needs it too (JSON endpoints, the web page); True opens reads
    # (`serve --public-read`) while ingest keeps needing the token.
    public_read: bool = False
    max_sql_body_bytes: int = 1 << 20  # a POST /sql body (JSON) larger than this is refused 413
    # POST /v1/traces answers once a request is in the write-ahead spool (service/otlp_spool.py);
    # past this many request bytes waiting there to be committed, it answers 503 + Retry-After.
    otlp_spool_bytes: int = 256 << 20
    # The committers compact (service/compaction.py) once a partition holds more than this many
    # files under 1 MB (each commit adds one per partition it touches), or 8 x this many under
    # 16 MB, checking every so many seconds. Few files keep a catalog derivation and every query
    # cheap under live ingest (docs/performance.md).
    compact_files: int = 8
    compact_interval_seconds: float = 5.0

    @staticmethod
    def allowed_hosts_default() -> tuple[str, ...]:
        return LOOPBACK_NAMES


def token_matches(config: ServiceConfig, given: str) -> bool:
    return bool(config.token) and hmac.compare_digest(given.encode(), config.token.encode())  # type: ignore[union-attr]


def reads_open(config: ServiceConfig) -> bool:
    """Reads need no token when none is configured (loopback by default) or with --public-read."""
    return not config.token or config.public_read


def bearer_matches(config: ServiceConfig, authorization: str | None) -> bool:
    scheme, _, given = (authorization or "").partition(" ")
    return scheme.lower() == "bearer" and token_matches(config, given)


def authorise_read(config: ServiceConfig, authorization: str | None) -> None:
    """Let a read of the store (GET /views, /runs, POST /sql ...) through: the one token rule."""
    if not reads_open(config) and not bearer_matches(config, authorization):
        raise refusal(401, "a valid bearer token is required (Authorization: Bearer <token>); the service was "
                           "started with a token and without --public-read", headers={"WWW-Authenticate": "Bearer"})


def authorise(config: ServiceConfig, authorization: str | None) -> None:
    """Let an ingest (POST /ingest, POST /v1/traces) through only with the bearer token; call it
    before reading the body."""
    if not config.token:
        raise refusal(403, "ingest is disabled: start the service with a token (TRACEWH_SERVICE_TOKEN)")
    if not bearer_matches(config, authorization):
        raise refusal(401, "a valid bearer token is required to ingest", headers={"WWW-Authenticate": "Bearer"})
