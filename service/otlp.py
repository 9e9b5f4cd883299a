"""The OTLP/HTTP traces receiver of `tracewh serve`: POST /v1/traces, as the OpenTelemetry SDKs'
OTLP/HTTP exporters and the Collector send it (docs/formats/otel.md §2).

- Authorised as POST /ingest is (service/config.py): a server started without a token refuses with
  403 and says how to set one; a missing or wrong bearer token gets 401. Checked before the body
  is read; nothing is stored.
- Bodies: `application/x-protobuf` or `application/json` (OTLP/JSON), plain, gzip or deflate,
  capped at MAX_BODY_BYTES (or the service's upload limit, if lower) before and after
  decompression: 413 past it. A body that does not decode is a 400, which clients do not retry.
  Decoding is the OTLP adapter's (ingest/adapters/otel/records.py); so is every span's mapping.
- Many small requests, few commits: requests are queued to WORKERS committer threads; a free
  one takes every request waiting, plus those arriving within LINGER_S of the first, and
  commits them as one batch (Warehouse.ingest_otlp). Each request is answered when its batch
  has committed: 200 with an ExportTraceServiceResponse means its spans are in the store. A
  batch the pipeline refuses is committed again request by request, so a bad request fails alone.
- Answers use the request's encoding; errors are google.rpc.Status bodies with the error
  contract's status (errors.py). Over MAX_PENDING_SPANS waiting: 503 with Retry-After, which
  clients retry.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
import time
import zlib
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fastapi import FastAPI, HTTPException, Request
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool

from ..errors import BadInputError, QualityError, TracewhError
from ..warehouse.layout import resolve_root
from .config import ServiceConfig, authorise

log = logging.getLogger("tracewh.otlp")
PATH = "/v1/traces"
MAX_BODY_BYTES = 64 << 20  # the OTLP spec's recommended cap
LINGER_S = 0.02  # how long a batch waits for more requests after its first arrived
WORKERS = 2  # one stages the next batch (Python) while the other commits (DuckDB, Delta: no GIL)
MAX_GROUP_SPANS = 50_000  # spans in one commit at most
MAX_PENDING_SPANS = 500_000  # queued beyond this, new requests are told to come back
RETRY_AFTER_S = 1
PROTOBUF, JSON = "application/x-protobuf", "application/json"
# google.rpc.Code for an HTTP status (clients ignore it; people reading a Status may not)
GRPC_CODES = {400: 3, 401: 16, 403: 7, 404: 5, 408: 4, 413: 8, 415: 3, 422: 3, 429: 8, 503: 14}


@dataclass
class _Request:
    body: bytes  # one serialized ExportTraceServiceRequest
    spans: int
    arrived: float = field(default_factory=time.monotonic)
    answer: Future = field(default_factory=Future)


class Committer:
    """Worker threads committing queued requests in groups: a commit's fixed cost (gate, Delta
    log, a file per partition) is paid once per group, not once per request. Commits are
    serialised by the store's writer lock; what comes before it (mapping spans, the gate) runs
    while the other worker commits."""

    def __init__(self, root: Path, linger_s: float = LINGER_S, max_group_spans: int = MAX_GROUP_SPANS,
                 workers: int = WORKERS):
        self.root, self.linger_s, self.max_group_spans, self.workers = root, linger_s, max_group_spans, workers
        self.waiting: queue.Queue[_Request] = queue.Queue()
        self.pending_spans = 0
        self._lock = threading.Lock()
        self._group_lock = threading.Lock()  # one worker gathers a group at a time
        self._threads: list[threading.Thread] = []

    def submit(self, body: bytes, spans: int) -> Future:
        with self._lock:
            if self.pending_spans + spans > MAX_PENDING_SPANS and self.pending_spans:
                raise HTTPException(503, f"{self.pending_spans} spans are waiting to be committed; retry shortly",
                                    headers={"Retry-After": str(RETRY_AFTER_S)})
            self.pending_spans += spans
            while len(self._threads) < self.workers:
                self._threads.append(threading.Thread(target=self._run, daemon=True,
                                                      name=f"tracewh-otlp-committer-{len(self._threads)}"))
                self._threads[-1].start()
        request = _Request(body, spans)
        self.waiting.put(request)
        return request.answer

    def _run(self) -> None:
        from ..api import Warehouse
        from ..ingest.prices import PriceRegistry

        warehouse, prices = Warehouse(self.root), PriceRegistry.load()  # kept: the store caches stored ids
        while True:
            with self._group_lock:
                group = self._next_group()
            try:
                self._commit(warehouse, prices, group)
            finally:
                with self._lock:
                    self.pending_spans -= sum(r.spans for r in group)

    def _next_group(self) -> list[_Request]:
        """Every request waiting, and those arriving until LINGER_S after the first, up to MAX_GROUP_SPANS."""
        group = [self.waiting.get()]
        spans, deadline = group[0].spans, group[0].arrived + self.linger_s
        while spans < self.max_group_spans:
            try:
                request = self.waiting.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                break
            group.append(request)
            spans += request.spans
        for request in group:  # from now on an answer cannot be cancelled (a client that left is
            request.answer.set_running_or_notify_cancel()  # answered by nobody; its spans still commit)
        return group

    def _commit(self, warehouse: Any, prices: Any, group: list[_Request]) -> None:
        started = time.monotonic()
        try:
            report = warehouse.ingest_otlp([r.body for r in group], prices=prices)
        except (BadInputError, QualityError) as error:
            if len(group) > 1:  # one request's spans refused: commit the others without it
                for request in group:
                    self._commit(warehouse, prices, [request])
                return
            _answer(group, error=error)
        except Exception as error:  # noqa: BLE001 - handed to each waiting request, which answers for it
            log.exception("committing %d OTLP requests failed", len(group))
            _answer(group, error=error)
        else:
            log.debug("committed %d requests, %d spans (%d new) in %.2f s", len(group), sum(r.spans for r in group),
                      report.added, time.monotonic() - started)
            _answer(group, result=report)


def _answer(group: list[_Request], *, result: Any = None, error: BaseException | None = None) -> None:
    for request in group:
        if not request.answer.cancelled():
            if error is None:
                request.answer.set_result(result)
            else:
                request.answer.set_exception(error)


def install_otlp(app: FastAPI, config: ServiceConfig) -> None:
    """Add POST /v1/traces to the service's app."""
    committer = Committer(resolve_root(config.warehouse))
    limit = min(MAX_BODY_BYTES, config.max_upload_bytes)

    @app.post(PATH, summary="OTLP/HTTP traces (protobuf or JSON): committed before the answer; needs the bearer token",
              response_class=Response)
    async def traces(request: Request) -> Response:
        as_json = (request.headers.get("content-type") or "").split(";")[0].strip().lower() == JSON
        try:
            authorise(config, request.headers.get("authorization"))
            body = await _read_body(request, limit, config.body_idle_seconds)
            message, spans = await run_in_threadpool(_decode, body, request.headers, limit)
            if spans:
                await asyncio.wrap_future(committer.submit(message, spans))
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


def _decode(body: bytes, headers: Any, limit: int) -> tuple[bytes, int]:
    """The request as serialized protobuf, and its span count; HTTPException when it does not decode."""
    from ..ingest.adapters.otel.records import decode_body

    media = (headers.get("content-type") or "").split(";")[0].strip().lower()
    if media not in (PROTOBUF, JSON):
        raise HTTPException(415, f"Content-Type {media or 'missing'!r}: send {PROTOBUF} or {JSON}")
    plain = _decompress(body, headers.get("content-encoding"), limit)
    try:
        message = decode_body(plain, media == JSON, "request body")
    except BadInputError as e:
        raise HTTPException(400, str(e)) from None
    spans = sum(len(s.spans) for r in message.resource_spans for s in r.scope_spans)
    return (message.SerializeToString() if media == JSON else plain), spans


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
