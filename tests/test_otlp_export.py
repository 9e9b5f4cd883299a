"""`tracewh export-otlp --endpoint` against local OTLP/HTTP endpoints: what counts as sent.

Two servers on 127.0.0.1 on different ports are two origins. A redirect to another origin is
never followed (the user's Authorization header must not reach it) and is an error; a 307/308
to the same origin is followed with the POST and its body; a 2xx counts only as far as its
ExportTraceServiceResponse's partial_success says; any other status is an error naming it.
"""

from __future__ import annotations

import gzip
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from google.rpc.status_pb2 import Status
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTracePartialSuccess,
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from helpers import llm_call, tracewh, write_native

TOKEN = "Bearer s3cret-token"
PROTOBUF, JSON = "application/x-protobuf", "application/json"


@dataclass
class Received:
    method: str
    path: str
    authorization: str | None
    spans: int  # spans in the body (0 for a bodiless request)


@dataclass
class Endpoint:
    """A local HTTP server: every request it gets, and what `answer` makes it reply."""

    answer: Callable[[Endpoint, Received], tuple[int, dict[str, str], bytes]]
    received: list[Received] = field(default_factory=list)
    url: str = ""

    @property
    def origin(self) -> str:
        return self.url.rsplit("/v1/traces", 1)[0]


@contextmanager
def endpoint(answer) -> Iterator[Endpoint]:
    state = Endpoint(answer)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            self._record()

        def do_GET(self) -> None:  # noqa: N802 - what a 301/302/303 turns a POST into
            self._record()

        def _record(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if self.headers.get("Content-Encoding") == "gzip":
                body = gzip.decompress(body)
            request = ExportTraceServiceRequest.FromString(body)
            spans = sum(len(s.spans) for r in request.resource_spans for s in r.scope_spans)
            received = Received(self.command, self.path, self.headers.get("Authorization"), spans)
            state.received.append(received)
            status, headers, reply = state.answer(state, received)
            self.send_response(status)
            for key, value in headers.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.url = f"http://127.0.0.1:{server.server_address[1]}/v1/traces"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()


def accepted(rejected: int = 0, message: str = "") -> tuple[int, dict[str, str], bytes]:
    """200 with an ExportTraceServiceResponse (its partial_success set when something is said)."""
    response = ExportTraceServiceResponse()
    if rejected or message:
        response.partial_success.CopyFrom(ExportTracePartialSuccess(rejected_spans=rejected, error_message=message))
    return 200, {"Content-Type": PROTOBUF}, response.SerializeToString()


def redirect(code: int, to: str) -> tuple[int, dict[str, str], bytes]:
    return code, {"Location": to}, b""


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    """A store of one run of 5 LLM calls: 5 spans, one request."""
    folder = tmp_path_factory.mktemp("otlp-export")
    events = write_native(folder / "run.jsonl", [llm_call("run-1", i, task_id="t1", model="m") for i in range(1, 6)])
    tracewh("ingest", events, "-w", folder / "wh", check=True)
    return folder / "wh"


def export(store: Path, url: str):
    return tracewh("export-otlp", "--endpoint", url, "--header", f"Authorization={TOKEN}", "-w", store)


def test_a_200_is_success(store):
    with endpoint(lambda state, got: accepted()) as collector:
        result = export(store, collector.url)
    assert result.code == 0, result.err
    assert "5 spans of 1 run in 1 request" in result.err
    assert [(r.method, r.authorization, r.spans) for r in collector.received] == [("POST", TOKEN, 5)]


@pytest.mark.parametrize("code", [301, 302, 303, 307, 308])
def test_a_redirect_to_another_origin_never_gets_the_credentials(store, code):
    with endpoint(lambda state, got: accepted()) as elsewhere, \
            endpoint(lambda state, got: redirect(code, elsewhere.url)) as collector:
        result = export(store, collector.url)
    assert result.code == 2, result.err
    assert f"HTTP {code} redirect to {elsewhere.url}, not followed" in result.err
    assert "Traceback" not in result.err and len(result.err.strip().splitlines()) == 1
    assert elsewhere.received == []  # neither the spans nor the Authorization header went there
    assert len(collector.received) == 1  # and a redirect is not retried


@pytest.mark.parametrize("code", [307, 308])
def test_a_method_preserving_redirect_within_the_origin_is_followed(store, code):
    def answer(state: Endpoint, got: Received):
        return redirect(code, "/v2/traces") if got.path == "/v1/traces" else accepted()

    with endpoint(answer) as collector:
        result = export(store, collector.url)
    assert result.code == 0, result.err
    assert [(r.method, r.path, r.authorization, r.spans) for r in collector.received] == [
        ("POST", "/v1/traces", TOKEN, 5), ("POST", "/v2/traces", TOKEN, 5)]


@pytest.mark.parametrize("code", [301, 302, 303])
def test_a_redirect_that_drops_the_body_is_refused_even_within_the_origin(store, code):
    def answer(state: Endpoint, got: Received):
        return redirect(code, "/v2/traces") if got.path == "/v1/traces" else accepted()

    with endpoint(answer) as collector:
        result = export(store, collector.url)
    assert result.code == 2 and f"HTTP {code} redirect to" in result.err, result.err
    assert [r.path for r in collector.received] == ["/v1/traces"]  # the bodiless GET never went


@pytest.mark.parametrize("as_json", [False, True])
def test_a_partial_success_counts_the_rejected_spans_as_not_sent(store, as_json):
    def answer(state: Endpoint, got: Received):
        if as_json:  # OTLP/JSON: int64 as a string, camelCase names
            return 200, {"Content-Type": JSON}, b'{"partialSuccess": {"rejectedSpans": "2", "errorMessage": "too old"}}'
        return accepted(rejected=2, message="too old")

    with endpoint(answer) as collector:
        result = export(store, collector.url)
    assert result.code == 2
    assert f"{collector.url} rejected 2 of the 5 spans sent (too old); the other 3 were accepted" in result.err
    assert len(collector.received) == 1  # a partial success is not retried


def test_a_partial_success_rejecting_nothing_is_a_warning(store):
    with endpoint(lambda state, got: accepted(message="sampling is on")) as collector:
        result = export(store, collector.url)
    assert result.code == 0, result.err
    assert f"warning from {collector.url}: sampling is on" in result.err


def test_a_2xx_whose_body_is_not_an_otlp_response_is_not_counted_as_sent(store):
    with endpoint(lambda state, got: (200, {"Content-Type": PROTOBUF}, b"\xff\xff not protobuf")) as collector:
        result = export(store, collector.url)
    assert result.code == 2
    assert "not an OTLP ExportTraceServiceResponse" in result.err and "unknown" in result.err


@pytest.mark.parametrize("code", [400, 401, 404, 500])
def test_a_non_2xx_is_an_error_naming_the_status_and_the_servers_message(store, code):
    body = Status(code=3, message="spans are malformed").SerializeToString()
    with endpoint(lambda state, got: (code, {"Content-Type": PROTOBUF}, body)) as collector:
        result = export(store, collector.url)
    assert result.code == 2
    assert f"refused the request (HTTP {code}: spans are malformed); 0 earlier requests were accepted" in result.err
    assert len(collector.received) == 1  # not retryable
