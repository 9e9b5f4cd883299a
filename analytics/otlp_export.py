"""Stored runs as OpenTelemetry traces: OTLP/JSON lines, and OTLP/HTTP requests to a collector.

One span per event, so a run opens in Phoenix, Jaeger or Langfuse with its tree as tracewh holds
it (docs/formats/otel.md says what each attribute means to them):

- ids: an event's trace id when it is 32 hex digits, else one derived from it, else from the
  run and task (a task is a trace); its span id when 16 hex digits, else one derived from it, else
  from the event id. When events share a span id (a task's start and finish), a delegation, LLM
  call, tool call or task start keeps it, then the earliest; the others get ids of their own and
  keep their parent. A parent span that none of the exported events holds gets a placeholder span
  (`tracewh.placeholder`), so the tree has a root in every viewer.
- times: start = the event's time, end = start + latency (the owner of a shared span ends with the
  last event sharing it). An event without a time starts at its task's previous known time (else
  the next, the run's first, or 2000-01-01) and says so (`tracewh.synthetic_time`).
- kinds back to GenAI attributes (`gen_ai.operation.name` chat, execute_tool, invoke_agent with
  model, usage, tool and agent names) and OpenInference's span kind for Phoenix; every other event
  is a plain span named after its kind.
- `tracewh.*` attributes keep what the conventions have no place for: the event's kind, id, seq,
  columns and payload (JSON text). The OTLP adapter (ingest/adapters/otel/) reads them back, so
  export-otlp and ingest round-trip a store's runs.

Requests hold one run's spans, whole traces of about SPANS_PER_REQUEST spans: a trace is split
only past MAX_SPANS_PER_REQUEST.
"""

from __future__ import annotations

import gzip
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa

from ..errors import UsageError
from ..version import __version__

SPANS_PER_REQUEST = 1000
MAX_SPANS_PER_REQUEST = 20_000
RETRYABLE = (429, 502, 503, 504)  # the OTLP spec's retryable statuses (docs/formats/otel.md §2)
ATTEMPTS = 5
CLIENT, INTERNAL = 3, 1  # OTLP Span.kind
STATUS_ERROR = 2
CARRIED = ("task_id", "subtask", "agent", "model", "trace_id", "span_id", "parent_span_id", "prompt_tokens",
           "completion_tokens", "reasoning_tokens", "cached_tokens", "cost_usd", "latency_s", "finish_reason", "tool_name",
           "score", "supersedes")
OPENINFERENCE_KINDS = {"llm_call": "LLM", "tool_call": "TOOL", "delegation": "AGENT"}


def _span_id(column: str) -> str:
    """SQL: the column as an OTel span id: itself when 16 hex digits (not all zero), else derived."""
    return (f"case when regexp_full_match(lower({column}), '[0-9a-f]{{16}}') and lower({column}) <> '{'0' * 16}' "
            f"then lower({column}) else substr(md5('tracewh span ' || {column}), 1, 16) end")


def _trace_id(column: str) -> str:
    return (f"case when regexp_full_match(lower({column}), '[0-9a-f]{{32}}') and lower({column}) <> '{'0' * 32}' "
            f"then lower({column}) else md5('tracewh trace ' || {column}) end")


# $1 runs, $2 benchmarks, $3 models (each a list, or NULL for all); run by run, trace by trace.
EXPORT_QUERY = f"""
with chosen as (
    select * from events
    where ($1::varchar[] is null or list_contains($1::varchar[], run_id))
      and ($2::varchar[] is null or list_contains($2::varchar[], benchmark))
      and ($3::varchar[] is null or run_id in (select run_id from events where list_contains($3::varchar[], model)))
), placed as (
    select *,
        coalesce({_trace_id('trace_id')},
                 {_trace_id('first_value(trace_id ignore nulls) over task')},
                 md5('tracewh trace ' || run_id || ' ' || coalesce(task_id, ''))) as otel_trace,
        {_span_id('span_id')} as shared_span,
        {_span_id('parent_span_id')} as otel_parent,
        coalesce(ts, last_value(ts ignore nulls) over (task_order rows between unbounded preceding and current row),
                 first_value(ts ignore nulls) over (task_order rows between current row and unbounded following),
                 min(ts) over (partition by run_id), TIMESTAMPTZ '2000-01-01 00:00:00+00') as start_ts
    from chosen
    window task as (partition by run_id, task_id),
           task_order as (partition by run_id, task_id order by seq, event_id)
), timed as (
    select *, epoch_ns(start_ts) as start_ns,
        epoch_ns(start_ts) + cast(round(coalesce(latency_s, 0) * 1e9) as bigint) as own_end_ns,
        row_number() over (partition by run_id, otel_trace, shared_span order by
            case kind when 'delegation' then 0 when 'llm_call' then 1 when 'tool_call' then 2
                      when 'task_started' then 3 else 4 end, seq, event_id) as span_rank
    from placed
), spans as (
    select *,
        case when shared_span is not null and span_rank = 1 then shared_span
             else substr(md5('tracewh event ' || event_id), 1, 16) end as otel_span,
        case when shared_span is not null and span_rank = 1
             then max(own_end_ns) over (partition by run_id, otel_trace, shared_span) else own_end_ns end as end_ns
    from timed
)
select * exclude (otel_parent, shared_span, span_rank, own_end_ns, start_ts),
       nullif(otel_parent, otel_span) as otel_parent
from spans
order by run_id, benchmark, otel_trace, seq, event_id
"""


@dataclass
class OtlpExport:
    """What export_otlp wrote or sent."""

    runs: int = 0
    spans: int = 0
    requests: int = 0
    placeholders: int = 0  # spans made up for parents no exported event holds
    sent: int = 0  # requests an endpoint accepted (wholly or in part)
    rejected: int = 0  # spans an endpoint answered 2xx for but rejected (OTLP partial success)
    said: list[str] = field(default_factory=list)  # partial_success.error_message of the endpoint's answers


def export_otlp(reader: pa.RecordBatchReader, out: Path | None, *, endpoint: str | None = None,
                headers: dict[str, str] | None = None) -> OtlpExport:
    """Write the rows of EXPORT_QUERY's `reader` as OTLP/JSON lines to `out` (Path('-') = stdout)
    and/or POST them to an OTLP/HTTP `endpoint` (the full URL, /v1/traces included) with `headers`."""
    summary = OtlpExport()
    sender = Sender(endpoint, headers or {}) if endpoint else None
    with _output(out) as stream:
        for request in _requests(_rows(reader), summary):
            if stream is not None:
                stream.write(orjson.dumps(request) + b"\n")
            if sender is not None:
                sender.send(request, summary)
    if sender is not None and summary.rejected:
        sender.refuse_partial(summary)
    return summary


def _output(out: Path | None) -> Any:
    if out is None:
        return nullcontext(None)
    if str(out) == "-":
        return nullcontext(sys.stdout.buffer)
    try:
        return open(out, "wb")
    except OSError as e:
        raise UsageError(f"cannot write {out}: {e.strerror or e}") from None


def _rows(reader: pa.RecordBatchReader) -> Iterator[dict[str, Any]]:
    for batch in reader:
        yield from batch.to_pylist()


def _requests(rows: Iterator[dict[str, Any]], summary: OtlpExport) -> Iterator[dict[str, Any]]:
    """OTLP/JSON requests: one run each, whole traces of about SPANS_PER_REQUEST spans."""
    batch = _Batch(summary)
    for row in rows:
        yield from batch.add(row)
    yield from batch.flush(last=True)


class _Batch:
    """The spans of whole traces of one run, waiting to become a request."""

    def __init__(self, summary: OtlpExport):
        self.summary = summary
        self.run: tuple[str, str] | None = None  # (run_id, benchmark)
        self.spans: list[dict[str, Any]] = []
        self.trace: list[dict[str, Any]] = []  # the spans of the trace being read
        self.trace_id: str | None = None
        self.split = False  # the trace being read was too large for one request

    def add(self, row: dict[str, Any]) -> Iterator[dict[str, Any]]:
        new_run = self.run is not None and (row["run_id"], row["benchmark"]) != self.run
        if new_run or self.trace_id is not None and row["otel_trace"] != self.trace_id:
            yield from self.flush(last=new_run)
        self.trace_id = row["otel_trace"]
        if self.run is None or new_run:
            self.run = (row["run_id"], row["benchmark"])
            self.summary.runs += 1
        self.trace.append(_span(row))
        if len(self.trace) >= MAX_SPANS_PER_REQUEST:
            self.spans, self.trace, self.split = self.spans + self.trace, [], True
            yield self._request()

    def flush(self, last: bool) -> Iterator[dict[str, Any]]:
        """The trace read is whole: keep it; a request goes when the run ends or the batch is full."""
        # placeholders only for a trace seen whole: a split one's parents may be in another request
        self.spans += self.trace if self.split else _with_placeholders(self.trace, self.summary)
        self.trace, self.split = [], False
        if self.spans and (last or len(self.spans) >= SPANS_PER_REQUEST):
            yield self._request()

    def _request(self) -> dict[str, Any]:
        run_id, benchmark = self.run
        spans, self.spans = self.spans, []
        self.summary.requests += 1
        self.summary.spans += len(spans)
        resource = _attributes({"service.name": f"tracewh-{benchmark}", "openinference.project.name": benchmark,
                                "tracewh.benchmark": benchmark, "tracewh.run_id": run_id})
        return {"resourceSpans": [{"resource": {"attributes": resource}, "scopeSpans": [
            {"scope": {"name": "tracewh", "version": __version__}, "spans": spans}]}]}


def _with_placeholders(trace: list[dict[str, Any]], summary: OtlpExport) -> list[dict[str, Any]]:
    """The trace's spans, plus a root span for each parent id that none of them holds."""
    held = {span["spanId"] for span in trace}
    children: dict[str, list[dict[str, Any]]] = {}
    for span in trace:
        if span.get("parentSpanId") and span["parentSpanId"] not in held:
            children.setdefault(span["parentSpanId"], []).append(span)
    summary.placeholders += len(children)
    return trace + [_placeholder(parent, kids) for parent, kids in children.items()]


def _placeholder(span_id: str, children: list[dict[str, Any]]) -> dict[str, Any]:
    task = next((a["value"]["stringValue"] for a in children[0]["attributes"] if a["key"] == "tracewh.task_id"), None)
    attributes = {"tracewh.placeholder": True, "tracewh.task_id": task}
    return {"traceId": children[0]["traceId"], "spanId": span_id, "name": f"task {task}" if task else "(parent not stored)",
            "kind": INTERNAL, "startTimeUnixNano": min(c["startTimeUnixNano"] for c in children),
            "endTimeUnixNano": max(c["endTimeUnixNano"] for c in children), "attributes": _attributes(attributes)}


def _span(row: dict[str, Any]) -> dict[str, Any]:
    payload = orjson.loads(row["payload"]) if row["payload"] else {}
    kind = row["kind"]
    span = {"traceId": row["otel_trace"], "spanId": row["otel_span"], "name": _name(row, payload),
            "kind": CLIENT if kind == "llm_call" else INTERNAL,
            "startTimeUnixNano": str(row["start_ns"]), "endTimeUnixNano": str(max(row["end_ns"], row["start_ns"])),
            "attributes": _attributes(_conventions(row, payload) | _carried(row, payload))}
    if row["otel_parent"]:
        span["parentSpanId"] = row["otel_parent"]
    error = _error(row, payload)
    if error:
        span["status"] = {"code": STATUS_ERROR, "message": error}
    return span


def _name(row: dict[str, Any], payload: dict[str, Any]) -> str:
    kind = row["kind"]
    if kind == "llm_call":
        return f"chat {row['model']}" if row["model"] else "chat"
    if kind == "tool_call":
        return f"execute_tool {row['tool_name']}" if row["tool_name"] else "execute_tool"
    if kind == "delegation":
        return f"invoke_agent {payload['to_agent']}" if payload.get("to_agent") else "invoke_agent"
    if kind == "span" and isinstance(payload.get("name"), str):
        return payload["name"]
    return kind


def _conventions(row: dict[str, Any], payload: dict[str, Any]) -> dict[str, Any]:
    """The GenAI (and, for Phoenix, OpenInference) attributes of the event's kind."""
    kind, attrs = row["kind"], {}
    if kind in OPENINFERENCE_KINDS:
        attrs["openinference.span.kind"] = OPENINFERENCE_KINDS[kind]
    if kind == "llm_call":
        attrs |= {"gen_ai.operation.name": "chat", "gen_ai.request.model": row["model"], "llm.model_name": row["model"],
                  "gen_ai.provider.name": payload.get("provider"), "gen_ai.agent.name": row["agent"],
                  "gen_ai.usage.input_tokens": row["prompt_tokens"], "gen_ai.usage.output_tokens": row["completion_tokens"],
                  "gen_ai.usage.cache_read.input_tokens": row["cached_tokens"],
                  "gen_ai.usage.reasoning.output_tokens": row["reasoning_tokens"],
                  "llm.token_count.prompt": row["prompt_tokens"], "llm.token_count.completion": row["completion_tokens"],
                  "gen_ai.response.finish_reasons": [row["finish_reason"]] if row["finish_reason"] else None}
    elif kind == "tool_call":
        arguments = payload.get("arguments")
        attrs |= {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": row["tool_name"], "tool.name": row["tool_name"],
                  "gen_ai.tool.call.id": payload.get("call_id"),
                  "gen_ai.tool.call.arguments": None if arguments is None else orjson.dumps(arguments).decode()}
    elif kind == "delegation":
        attrs |= {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": payload.get("to_agent"),
                  "agent.name": payload.get("to_agent"), "gen_ai.request.model": payload.get("to_model")}
    return attrs


def _carried(row: dict[str, Any], payload: dict[str, Any]) -> dict[str, Any]:
    """tracewh's own attributes: the event's kind, id, seq, columns and payload."""
    attrs = {"tracewh.kind": row["kind"], "tracewh.event_id": row["event_id"], "tracewh.seq": row["seq"]}
    attrs |= {f"tracewh.{column}": row[column] for column in CARRIED}
    if row["ts"] is None:
        attrs["tracewh.synthetic_time"] = True
    if row["payload"] is not None:
        attrs["tracewh.payload"] = row["payload"]  # as stored: JSON text with sorted keys
    return attrs


def _error(row: dict[str, Any], payload: dict[str, Any]) -> str | None:
    error = payload.get("error")
    if error:
        return error if isinstance(error, str) else orjson.dumps(error).decode()
    if payload.get("status") == "error" or row["finish_reason"] == "error":
        return "error"
    return None


def _attributes(values: dict[str, Any]) -> list[dict[str, Any]]:
    """OTLP/JSON KeyValues; None values are left out (an empty AnyValue says nothing)."""
    return [{"key": key, "value": _any_value(value)} for key, value in values.items() if value is not None]


def _any_value(value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}  # int64 as a decimal string (OTLP/JSON)
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, (list, tuple)):
        return {"arrayValue": {"values": [_any_value(v) for v in value]}}
    return {"stringValue": str(value)}


class Sender:
    """POSTs requests to an OTLP/HTTP endpoint as gzip'd protobuf (what every collector accepts),
    retrying the statuses the spec calls retryable (honouring Retry-After) and lost connections.

    A span counts as sent only when a 2xx answer's ExportTraceServiceResponse says so: its
    partial_success.rejected_spans are not sent (export_otlp then ends in an error naming them).
    A redirect is followed only when it keeps the method, the body and the origin (307/308, same
    scheme, host and port): the request carries the user's credentials (--header Authorization=...),
    which must never reach another origin, and a 301/302/303 would turn the POST into a bodiless GET
    that "succeeds" with nothing delivered. urllib (not a third-party client) because it is enough
    once its redirect handler is replaced, and it keeps the runtime dependencies as they are."""

    def __init__(self, endpoint: str, headers: dict[str, str]):
        if not endpoint.startswith(("http://", "https://")):
            raise UsageError(f"--endpoint {endpoint!r}: give the full http(s) URL, e.g. http://localhost:4318/v1/traces")
        self.endpoint = endpoint
        self.headers = {"Content-Type": "application/x-protobuf", "Content-Encoding": "gzip",
                        "User-Agent": f"tracewh/{__version__}"} | headers
        self.opener = urllib.request.build_opener(_SameOriginRedirects)  # replaces the default redirect handler

    def send(self, request: dict[str, Any], summary: OtlpExport) -> None:
        from ..ingest.adapters.otel.records import from_json

        body = gzip.compress(from_json(request, "export").SerializeToString())  # from_json: our JSON is OTLP
        spans = sum(len(scope["spans"]) for resource in request["resourceSpans"] for scope in resource["scopeSpans"])
        for attempt in range(ATTEMPTS):
            status, wait, detail, answer = self._post(body)
            if status is not None and 200 <= status < 300:
                self._accept(answer, spans, summary)
                return
            if status is not None and status not in RETRYABLE or attempt == ATTEMPTS - 1:
                raise UsageError(f"{self.endpoint} refused the request ({detail}); {summary.sent} earlier "
                                 "requests were accepted, nothing more was sent")
            time.sleep(wait if wait is not None else 2 ** attempt)

    def _accept(self, answer: bytes | None, spans: int, summary: OtlpExport) -> None:
        """Count a 2xx answer: its partial_success, read, says how many of `spans` were rejected."""
        if answer is None:
            raise UsageError(f"{self.endpoint} answered 2xx with a body that is not an OTLP ExportTraceServiceResponse, "
                             f"so which spans it kept is unknown; {summary.sent} earlier requests were accepted, "
                             "nothing more was sent")
        summary.sent += 1
        partial = answer.partial_success
        summary.rejected += min(max(partial.rejected_spans, 0), spans)  # a count past what was sent is not believed
        message = " ".join(partial.error_message.split())[:300]
        if message and message not in summary.said:
            summary.said.append(message)

    def refuse_partial(self, summary: OtlpExport) -> None:
        """The endpoint kept only some spans: an error that says how many and why."""
        said = f" ({'; '.join(summary.said)})" if summary.said else ""
        raise UsageError(f"{self.endpoint} rejected {summary.rejected} of the {summary.spans} spans sent{said}; "
                         f"the other {summary.spans - summary.rejected} were accepted")

    def _post(self, body: bytes) -> tuple[int | None, float | None, str, Any]:
        """(status or None when no answer came, Retry-After seconds, what to tell the user, the parsed
        ExportTraceServiceResponse of a 2xx, or None when its body is not one)."""
        request = urllib.request.Request(self.endpoint, data=body, headers=self.headers, method="POST")
        try:
            with self.opener.open(request, timeout=60) as response:  # noqa: S310 - the user's own endpoint
                return response.status, None, str(response.status), _response(response)
        except urllib.error.HTTPError as e:
            retry_after = e.headers.get("Retry-After", "")
            if 300 <= e.code < 400:
                return e.code, None, _redirect_detail(e), None
            return e.code, float(retry_after) if retry_after.isdigit() else None, f"HTTP {e.code}: {_error_detail(e)}", None
        except (urllib.error.URLError, OSError) as e:
            return None, None, f"no answer: {getattr(e, 'reason', e)}", None


class _SameOriginRedirects(urllib.request.HTTPRedirectHandler):
    """Follows a redirect only when it is a 307/308 to the same origin (the POST, its body and its
    headers go again); any other raises the redirect as an HTTPError, which Sender reports."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):  # noqa: ANN001, ANN201 - urllib's signature
        if code in (307, 308) and _origin(newurl) == _origin(req.full_url):
            return urllib.request.Request(newurl, data=req.data, headers=dict(req.headers),
                                          method=req.get_method())
        raise urllib.error.HTTPError(req.full_url, code, msg, headers, fp)


def _origin(url: str) -> tuple[str, str, int | None]:
    """(scheme, host, port) with the scheme's default port filled in, as browsers compare origins."""
    parts = urllib.parse.urlsplit(url)
    try:
        port = parts.port
    except ValueError:  # a port that is not a number: no origin equals it
        return parts.scheme.lower(), url, None
    return parts.scheme.lower(), (parts.hostname or "").lower(), port or {"http": 80, "https": 443}.get(parts.scheme.lower())


def _redirect_detail(e: urllib.error.HTTPError) -> str:
    where = e.headers.get("Location", "(no Location)")
    return (f"HTTP {e.code} redirect to {where[:200]}, not followed: tracewh follows only a 307 or 308 to the same "
            "scheme, host and port, so that the request's headers never reach another origin; give that URL as --endpoint")


def _response(response: Any) -> Any:
    """The 2xx body as an ExportTraceServiceResponse (protobuf or JSON, by Content-Type; an empty body is
    an empty response: everything accepted), or None when it is not one."""
    from google.protobuf import json_format
    from google.protobuf.message import DecodeError
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

    body = response.read(1 << 20)
    answer = ExportTraceServiceResponse()
    try:
        if body.strip() and response.headers.get_content_type() == "application/json":
            json_format.Parse(body, answer, ignore_unknown_fields=True)
        elif body:
            answer.ParseFromString(body)
    except (DecodeError, json_format.ParseError, ValueError):
        return None
    return answer


def _error_detail(e: urllib.error.HTTPError) -> str:
    """What a failure's body says: the google.rpc.Status message of a protobuf body, else its text."""
    body = e.read(4096)
    if e.headers.get_content_type() == "application/x-protobuf":
        from google.protobuf.message import DecodeError
        from google.rpc.status_pb2 import Status

        try:
            return Status.FromString(body).message[:300]
        except DecodeError:
            pass
    return body[:300].decode("utf-8", "replace").strip()
