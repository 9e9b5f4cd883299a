"""The OTLP/HTTP traces receiver of `tracewh serve`: POST /v1/traces, as the OpenTelemetry SDKs'
OTLP/HTTP exporters and the Collector send it (docs/formats/otel.md §2).

- Authorised as POST /ingest is (service/config.py): a server started without a token refuses with
  403 and says how to set one; a missing or wrong bearer token gets 401. Checked before the body
  is read; nothing is stored.
- Bodies: `application/x-protobuf` or `application/json` (OTLP/JSON), plain, gzip or deflate,
  capped at MAX_BODY_BYTES (or the service's upload limit, if lower) before and after
  decompression: 413 past it, naming the limit. MAX_BODY_BYTES is the pipeline's record limit,
  since each request is one record of the batch it commits in: one limit end to end, so a
  request the receiver takes is never refused later (exporters do not retry a 4xx). A body
  that does not decode, or holds a span the mapping refuses (events.check_request), is a 400,
  which clients do not retry. Decoding is the OTLP adapter's (ingest/adapters/otel/records.py);
  so is every span's mapping. JSON bodies are committed as JSON, protobuf ones as protobuf, so
  `tracewh log` names the encoding each batch was sent in.
- Acknowledged on durability: a request that decodes and passes the checks is appended to the
  store's write-ahead spool (WAREHOUSE/_spool/otlp/, fsynced, concurrent requests sharing one
  fsync) and answered 200 with an ExportTraceServiceResponse then: its spans survive a crash
  from that moment and are committed exactly once, in the background, within about a second
  (service/otlp_spool.py: group commits, replay at start, the quarantine for a request the gate
  refuses after its 200, compaction of small files). Nothing is spooled for a refused request.
- Answers use the request's encoding; errors are google.rpc.Status bodies with the error
  contract's status (errors.py). Over ServiceConfig.otlp_spool_bytes waiting in the spool: 503
  with Retry-After, which clients retry.
"""

from __future__ import annotations

import asyncio
import zlib
from typing import Any

from fastapi import FastAPI, HTTPException, Request
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool

from ..errors import BadInputError, TracewhError
from ..ingest.sources import Limits
from ..warehouse.layout import resolve_root
from .config import ServiceConfig, authorise
from .compaction import Compactor
from .otlp_spool import Committer

PATH = "/v1/traces"
# The pipeline's record limit (32 MiB), not the spec's recommended 64 MiB: a request is one record
# of its batch, and one the pipeline would refuse must be refused here, as a 413 naming the limit.
MAX_BODY_BYTES = Limits().max_line_bytes
PROTOBUF, JSON = "application/x-protobuf", "application/json"
# google.rpc.Code for an HTTP status (clients ignore it; people reading a Status may not)
GRPC_CODES = {400: 3, 401: 16, 403: 7, 404: 5, 408: 4, 413: 8, 415: 3, 422: 3, 429: 8, 503: 14}


def install_otlp(app: FastAPI, config: ServiceConfig, compactor: Compactor) -> None:
    """Add POST /v1/traces to the service's app."""
    committer = Committer(resolve_root(config.warehouse), max_bytes=config.otlp_spool_bytes, compactor=compactor)
    committer.start(ingest=bool(config.token))  # and what a killed or stopped service spooled is committed first
    if config.token:  # once it serves (uvicorn runs the startup hooks; an app only made, as in tests, does not)
        app.router.on_startup.append(committer.preload)
    app.router.on_shutdown.append(committer.close)
    app.state.otlp_committer = committer
    limit = min(MAX_BODY_BYTES, config.max_upload_bytes)

    @app.post(PATH, summary="OTLP/HTTP traces (protobuf or JSON): answered once durably spooled, queryable about a "
                            "second later; needs the bearer token",
              response_class=Response)
    async def traces(request: Request) -> Response:
        as_json = (request.headers.get("content-type") or "").split(";")[0].strip().lower() == JSON
        try:
            authorise(config, request.headers.get("authorization"))
            body = await _read_body(request, limit, config.body_idle_seconds)
            await run_in_threadpool(_receive, committer, body, request.headers, limit, as_json)
        except HTTPException as e:
            return _status(e.status_code, str(e.detail), as_json, e.headers)
        except TracewhError as e:
            return _status(e.http_status, str(e), as_json)
        return Response(b"{}" if as_json else b"", media_type=JSON if as_json else PROTOBUF)  # no partial_success


async def _read_body(request: Request, limit: int, idle_s: float) -> bytes:
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > limit:
        raise HTTPException(413, f"request body larger than the {limit}-byte limit")
    chunks, size = [], 0
    stream = request.stream().__aiter__()
    while True:
        try:
            chunk = await asyncio.wait_for(stream.__anext__(), idle_s)
        except StopAsyncIteration:
            return b"".join(chunks)
        except TimeoutError:
            raise HTTPException(408, f"the request body stalled for {idle_s:g} s") from None
        size += len(chunk)
        if size > limit:
            raise HTTPException(413, f"request body larger than the {limit}-byte limit")
        chunks.append(chunk)


def _receive(committer: Committer, body: bytes, headers: Any, limit: int, as_json: bool) -> None:
    """Check the request and spool it, in one trip to a worker thread: while a commit runs, each
    hand-over between the event loop and a worker waits for the GIL."""
    record, spans = _decode(body, headers, limit)
    if spans:
        committer.accept(record, spans, as_json)


def _decode(body: bytes, headers: Any, limit: int) -> tuple[bytes, int]:
    """The request as the pipeline will read it (protobuf, or one line of OTLP/JSON), and its span
    count; HTTPException when it does not decode or holds a span the mapping refuses."""
    from ..ingest.adapters.otel.events import check_request
    from ..ingest.adapters.otel.records import decode_body

    media = (headers.get("content-type") or "").split(";")[0].strip().lower()
    if media not in (PROTOBUF, JSON):
        raise HTTPException(415, f"Content-Type {media or 'missing'!r}: send {PROTOBUF} or {JSON}")
    plain = _decompress(body, headers.get("content-encoding"), limit)
    try:
        message, record = decode_body(plain, media == JSON, "request body")
        check_request(message, "request body")
    except BadInputError as e:
        raise HTTPException(400, str(e)) from None
    # what the pipeline reads is the record, a JSON one with its line's newline: within the limit too
    if len(record) + (media == JSON) > limit:
        raise HTTPException(413, f"request body larger than the {limit}-byte limit once stored as one record")
    spans = sum(len(s.spans) for r in message.resource_spans for s in r.scope_spans)
    return record, spans


def _decompress(body: bytes, encoding: str | None, limit: int) -> bytes:
    encoding = (encoding or "identity").strip().lower()
    if encoding == "identity":
        return body
    if encoding not in ("gzip", "deflate"):
        raise HTTPException(415, f"Content-Encoding {encoding!r}: send gzip, deflate or none")
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS if encoding == "gzip" else zlib.MAX_WBITS)
    try:
        plain = inflater.decompress(body, limit + 1)
    except zlib.error as e:
        raise HTTPException(400, f"the {encoding} body does not decompress: {e}") from None
    if len(plain) > limit:
        raise HTTPException(413, f"request body decompresses to more than the {limit}-byte limit")
    if not inflater.eof:
        raise HTTPException(400, f"the {encoding} body is truncated")
    return plain


def _status(code: int, message: str, as_json: bool, headers: dict[str, str] | None = None) -> Response:
    """An OTLP error answer: a google.rpc.Status in the request's encoding."""
    from google.rpc.status_pb2 import Status

    status = Status(code=GRPC_CODES.get(code, 13), message=message)
    if as_json:
        import orjson

        return Response(orjson.dumps({"code": status.code, "message": message}), code, headers, JSON)
    return Response(status.SerializeToString(), code, headers, PROTOBUF)
