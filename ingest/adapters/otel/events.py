"""OTLP spans -> events, one event per span (docs/formats/otel.md §5-§7).

Envelope:
- `event_id` derives from the trace and span ids alone: the same span sent again (an exporter's
  retry, a file ingested after its spans came over HTTP) is the same event and adds nothing.
  A span repeated inside one file or one batch of requests is read once. (A span tracewh
  exported keeps the id it had in the store it came from, `tracewh.event_id`, so runs sent
  back to that store add nothing either.)
- `benchmark`: resource attribute `tracewh.benchmark`, else `otel`; `run_id`: resource attribute
  `tracewh.run_id`, else the trace id; `task_id`: span attribute `tracewh.task_id`, else the trace
  id (a trace is a task).
- `trace_id`, `span_id`, `parent_span_id`: the span's own ids in lowercase hex. The parent is the
  span's OTel parent whatever kind that parent maps to, and whether or not it has arrived: SDKs
  export children first, across requests and files (§7).
- `ts`: span start; `latency_s`: end - start; `seq`: span start in microseconds since the Unix
  epoch (docs/formats/otel.md §7 "seq"). Not a small ordinal: an ordinal in time order within
  the run cannot be given at ingest, since the spans of a run arrive in any order, over many
  requests (the root, which starts first, is exported last) and events are never rewritten; a
  time is the one order that holds across requests and files, is the same however often a
  span arrives, and in microseconds stays exact in JSON numbers (doubles: nanoseconds since
  1970 are not). `ROW_NUMBER() OVER (PARTITION BY run_id ORDER BY seq)` gives the ordinal.
  Spans do not arrive in that order, so `source` is `FILE#SPAN_ID:LINE`: each span is its own
  stream for the gate's seq-order rule.

Kind: `tracewh.kind` when it names a known kind (spans `tracewh export-otlp` wrote), else
gen_ai.operation.name chat / text_completion / generate_content -> `llm_call`, execute_tool ->
`tool_call`, invoke_agent / create_agent -> `delegation`; else openinference.span.kind LLM, TOOL,
AGENT likewise; every other span (CHAIN, RETRIEVER, EMBEDDING, embeddings, plain spans) is a
`span` event, so no tree loses a node.

Columns (conventions.py has the attribute lists, in order of trust), for spans tracewh did not
export itself: model from
gen_ai.response.model, gen_ai.request.model, llm.model_name; tokens from gen_ai.usage.*, else
llm.token_count.*, on `llm_call` events only (agent spans repeat their children's sums); cost
from llm.cost.total, else the price table; provider, tool name, tool arguments/result
(GenAI attributes, else OpenInference's tool.name and input/output.value), finish reason (the
first of gen_ai.response.finish_reasons, else llm.finish_reason). A span `tracewh export-otlp`
wrote (it carries `tracewh.event_id`) has its columns, its ids among them, read from its
`tracewh.<column>` attributes alone, an absent one being null: a store exported and ingested
again holds the same events, ids and payloads (the OTel ids, derived where the store had none
or non-hex ones, are what viewers see).

Refused, naming the field (exit 2; 400 from the receiver, which checks a request before
queueing it, `check_request`): a `tracewh.run_id` or `tracewh.benchmark` resource attribute that
is a list or a map (not a name), a span `kind` outside SpanKind's 0-5, an `endTimeUnixNano`
before `startTimeUnixNano`, a token count above MAX_TOKENS (int64 max from a broken counter
would overflow every total it joins).

Errors: status ERROR gives payload `status: "error"` and `error` (error.type, else the exception
event's type, else the status message, else "error"); an `llm_call` that names no finish reason
gets `finish_reason: "error"`. Status OK gives `status: "ok"`; UNSET leaves both out.

Payload: `name`, `span_kind`, `operation`, `attributes` (every span attribute; none is dropped),
`resource`, `scope`, and when present `events`, `links`, `trace_state`, `dropped`; per kind
`provider`, `arguments`/`result`/`call_id`, `to_agent`/`to_model`. A `tracewh.payload` attribute
(the event's payload as tracewh exported it) is restored, its keys winning. A span export-otlp
made up for a parent the store did not hold (`tracewh.placeholder`) is no event: the events
that name it as parent come back as they were.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

import orjson

from ....errors import BadInputError
from ....schema import event_id
from ...context import AdapterContext
from ...sources import SourceFile
from . import conventions as cv
from .attributes import attribute_map, integer, json_value, number, structured, text
from .records import requests

BENCHMARK = "otel"
SPAN_KINDS = ("UNSPECIFIED", "INTERNAL", "SERVER", "CLIENT", "PRODUCER", "CONSUMER")
STATUS_OK, STATUS_ERROR = 1, 2
EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
# A trillion tokens in one span: a thousand times any model's context. Above it a count is a
# sender's bug (int64 max, a wrapped counter), and summed it would overflow the runs' totals.
MAX_TOKENS = 10**12
TOKEN_ATTRIBUTES = frozenset(
    [name for names in cv.TOKENS.values() for name in names] +
    [cv.COLUMN_PREFIX + column for column in cv.TOKENS])
NAME_ATTRIBUTES = (cv.RUN_ATTR, cv.BENCHMARK_ATTR)  # resource attributes that name a run or benchmark


@dataclass(frozen=True)
class Origin:
    """Where the spans being read come from: their resource and scope, and the file position."""

    file: SourceFile
    line: int
    benchmark: str
    run_id: str | None
    resource: dict[str, Any]
    scope: dict[str, Any]

    def error(self, problem: str, field: str | None = None) -> BadInputError:
        return BadInputError(self.file.display, problem, line=self.line, field=field)


def events(fmt: str, file: SourceFile, ctx: AdapterContext) -> Iterator[tuple[int, dict[str, Any]]]:
    seen: set[bytes] = set()  # trace id + span id of the spans read: a repeat is the same event
    for line, request in requests(fmt, file, ctx):
        for resource_spans in request.resource_spans:
            resource = attribute_map(resource_spans.resource.attributes)
            _check_names(resource, file.display, line)
            for scope_spans in resource_spans.scope_spans:
                origin = Origin(file, line, text(resource.get(cv.BENCHMARK_ATTR)) or BENCHMARK,
                                text(resource.get(cv.RUN_ATTR)), resource, _scope(scope_spans.scope))
                for span in scope_spans.spans:
                    key = span.trace_id + span.span_id
                    if key not in seen:
                        seen.add(key)
                        attrs = attribute_map(span.attributes)  # once: the checks and the mapping read it
                        _check_span(span, file.display, line, attrs)
                        event = span_event(span, attrs, origin, ctx)
                        if event is not None:
                            yield line, event


def check_request(request: Any, display: str) -> None:
    """What `events` would refuse in this request, found without mapping it: the receiver asks
    before it queues a request, to answer 400 at once (BadInputError)."""
    for resource_spans in request.resource_spans:
        _check_names(attribute_map(resource_spans.resource.attributes), display, None)
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                _check_span(span, display, None)


def _check_names(resource: dict[str, Any], display: str, line: int | None) -> None:
    for name in NAME_ATTRIBUTES:
        if isinstance(resource.get(name), (list, dict)):
            kind = "a list" if isinstance(resource[name], list) else "a map"
            raise BadInputError(display, f"resource attribute {name} is {kind}, not a name: send one string",
                                line=line, field=name)


def _check_span(span: Any, display: str, line: int | None, attrs: dict[str, Any] | None = None) -> None:
    """A span no sender should write: refused rather than stored as something it is not.
    `attrs`: the span's attributes, when the caller mapped them (the commit does anyway)."""
    kind = span.kind
    if not 0 <= kind < len(SPAN_KINDS):
        raise _span_error(span, f"kind {kind} is not a SpanKind (0-{len(SPAN_KINDS) - 1})", "kind", display, line)
    start, end = span.start_time_unix_nano, span.end_time_unix_nano
    if start and end and end < start:
        raise _span_error(span, f"ends before it starts (endTimeUnixNano {end} < startTimeUnixNano {start})",
                          "endTimeUnixNano", display, line)
    if attrs is not None and len(attrs) == len(span.attributes):  # no key sent twice: every value is in attrs
        tokens = ((name, value) for name, value in attrs.items() if name in TOKEN_ATTRIBUTES)
    else:
        tokens = ((kv.key, json_value(kv.value)) for kv in span.attributes if kv.key in TOKEN_ATTRIBUTES)
    for name, value in tokens:
        count = integer(value)
        if count is not None and count > MAX_TOKENS:
            raise _span_error(span, f"{count} tokens is over the {MAX_TOKENS:,}-token limit of one span "
                              "(a broken counter?)", name, display, line)


def _span_error(span: Any, problem: str, field: str, display: str, line: int | None) -> BadInputError:
    return BadInputError(display, f"span {span.span_id.hex() or '(no id)'}: {problem}", line=line, field=field)


def _scope(scope: Any) -> dict[str, Any]:
    fields = {"name": scope.name, "version": scope.version, "attributes": attribute_map(scope.attributes)}
    return {k: v for k, v in fields.items() if v}


def span_event(span: Any, attrs: dict[str, Any], origin: Origin, ctx: AdapterContext) -> dict[str, Any] | None:
    """The span's event (`attrs`: its attributes, mapped); None for a placeholder export-otlp made
    up for a parent it did not hold."""
    if attrs.get(cv.PLACEHOLDER_ATTR) is True:
        return None
    trace_id, span_id = _hex(span.trace_id, 16, "traceId", origin), _hex(span.span_id, 8, "spanId", origin)
    kind = cv.classify(attrs)
    event = {"event_id": event_id("otlp", trace_id, span_id), "run_id": origin.run_id or trace_id,
             "benchmark": origin.benchmark, "kind": kind, "trace_id": trace_id, "span_id": span_id,
             "parent_span_id": _parent(span.parent_span_id, origin), "source": f"{origin.file.name}#{span_id}:{origin.line}",
             **_times(span, attrs), "task_id": trace_id}
    if cv.EXPORTED_ATTR in attrs:  # tracewh exported it: every column is carried (an absent one was null)
        event |= dict.fromkeys(("latency_s", "task_id", "trace_id", "span_id", "parent_span_id"))
        event["payload"] = _added_since_export(attrs, origin)
    else:
        event["payload"] = _payload(span, attrs, origin)
        _from_conventions(event, span, attrs, ctx)
    event.update(_carried_columns(attrs))
    if cv.PAYLOAD_ATTR in attrs:
        event["payload"] |= _carried_payload(attrs, origin)
    elif not event["payload"]:
        event["payload"] = None  # exported from an event without a payload
    return event


def _from_conventions(event: dict[str, Any], span: Any, attrs: dict[str, Any], ctx: AdapterContext) -> None:
    error = _error(span, attrs, event["payload"])
    if error:
        event["payload"]["error"] = error
    _KIND_COLUMNS.get(event["kind"], _no_columns)(event, attrs, error, ctx)
    if event["kind"] != "delegation":
        event["agent"] = event.get("agent") or text(cv.first(attrs, cv.AGENT))
        event["model"] = event.get("model") or text(cv.first(attrs, cv.MODEL))
    if None in event["payload"].values():  # rebuilt only then: most spans have a value for every key
        event["payload"] = {k: v for k, v in event["payload"].items() if v is not None}


def _added_since_export(attrs: dict[str, Any], origin: Origin) -> dict[str, Any]:
    """Of a span tracewh exported, the attributes it did not write (a collector's processors may
    add some): kept under `otel`. What it wrote restates the carried columns and payload."""
    added = {"attributes": {k: v for k, v in attrs.items() if k not in cv.EXPORTED_ATTRIBUTES
                            and not k.startswith(cv.COLUMN_PREFIX)},
             "resource": {k: v for k, v in origin.resource.items() if k not in cv.EXPORTED_RESOURCE
                          and not k.startswith(cv.COLUMN_PREFIX)}}
    added = {k: v for k, v in added.items() if v}
    return {"otel": added} if added else {}


def _hex(raw: bytes, size: int, field: str, origin: Origin) -> str:
    if len(raw) != size:
        raise origin.error(f"an id of {size} bytes is required, got {len(raw)}", field)
    if not any(raw):
        raise origin.error("an all-zero id is not a valid id", field)
    return raw.hex()


def _parent(raw: bytes, origin: Origin) -> str | None:
    if not raw or not any(raw):  # empty (or all zeros, which no SDK writes): a root span
        return None
    if len(raw) != 8:
        raise origin.error(f"a parent span id has 8 bytes, got {len(raw)}", "parentSpanId")
    return raw.hex()


def _times(span: Any, attrs: dict[str, Any]) -> dict[str, Any]:
    start, end = span.start_time_unix_nano, span.end_time_unix_nano
    made_up = attrs.get(cv.SYNTHETIC_TIME_ATTR) is True
    return {"seq": (start or end) // 1000,  # microseconds: see the module's docstring
            "ts": None if made_up or not start else EPOCH + timedelta(microseconds=start // 1000),
            "latency_s": (end - start) / 1e9 if start and end >= start else None}


def _payload(span: Any, attrs: dict[str, Any], origin: Origin) -> dict[str, Any]:
    kind, status = span.kind, span.status
    attributes = dict(attrs)
    attributes.pop(cv.PAYLOAD_ATTR, None)  # restored as the payload itself (span_event)
    payload: dict[str, Any] = {
        "name": span.name, "span_kind": SPAN_KINDS[kind] if kind < len(SPAN_KINDS) else str(kind),
        "operation": cv.operation(attrs), "attributes": attributes, "resource": origin.resource, "scope": origin.scope}
    if status.code in (STATUS_OK, STATUS_ERROR):
        payload["status"] = "ok" if status.code == STATUS_OK else "error"
    if status.message:
        payload["status_message"] = status.message
    if span.events:
        payload["events"] = [{"name": e.name, "ts": _iso(e.time_unix_nano), "attributes": attribute_map(e.attributes)}
                             for e in span.events]
    if span.links:
        payload["links"] = [{"trace_id": link.trace_id.hex(), "span_id": link.span_id.hex(),
                             "attributes": attribute_map(link.attributes)} for link in span.links]
    if span.trace_state:
        payload["trace_state"] = span.trace_state
    dropped = {"attributes": span.dropped_attributes_count, "events": span.dropped_events_count,
               "links": span.dropped_links_count}
    if any(dropped.values()):
        payload["dropped"] = dropped  # what the sender itself dropped, for the record
    return payload


def _iso(nanos: int) -> str | None:
    return (EPOCH + timedelta(microseconds=nanos // 1000)).isoformat() if nanos else None


def _error(span: Any, attrs: dict[str, Any], payload: dict[str, Any]) -> str | None:
    if span.status.code != STATUS_ERROR:
        return None
    events_mapped = payload.get("events", ())  # the span's events, as _payload mapped them
    exception = next((e["attributes"].get("exception.type") for e in events_mapped if e["name"] == "exception"), None)
    return text(attrs.get(cv.ERROR_TYPE)) or text(exception) or span.status.message or "error"


def _llm_call(event: dict[str, Any], attrs: dict[str, Any], error: str | None, ctx: AdapterContext) -> None:
    event["model"] = text(cv.first(attrs, cv.MODEL))
    for column, names in cv.TOKENS.items():
        event[column] = integer(cv.first(attrs, names))
    reasons = cv.first(attrs, cv.FINISH_REASONS)
    event["finish_reason"] = text(reasons[0] if isinstance(reasons, list) else reasons) or ("error" if error else None)
    cost = number(cv.first(attrs, cv.COST))
    event["cost_usd"] = cost if cost is not None else ctx.prices.cost(
        event["model"], event["prompt_tokens"], event["completion_tokens"], event["cached_tokens"])
    event["payload"]["provider"] = text(cv.first(attrs, cv.PROVIDER))


def _tool_call(event: dict[str, Any], attrs: dict[str, Any], error: str | None, ctx: AdapterContext) -> None:
    name = event["payload"]["name"]
    event["tool_name"] = text(cv.first(attrs, cv.TOOL_NAME)) or name.removeprefix("execute_tool ").strip() or name
    event["payload"] |= {"arguments": structured(cv.first(attrs, cv.TOOL_ARGUMENTS)),
                         "result": structured(cv.first(attrs, cv.TOOL_RESULT)),
                         "call_id": text(cv.first(attrs, cv.TOOL_CALL_ID))}


def _delegation(event: dict[str, Any], attrs: dict[str, Any], error: str | None, ctx: AdapterContext) -> None:
    # The agent span is the receiving agent's: who delegated is the parent's business (unknown
    # here, and perhaps not arrived yet), so `agent` and `model` stay empty unless carried.
    event["payload"] |= {"to_agent": text(cv.first(attrs, cv.AGENT)), "to_model": text(cv.first(attrs, cv.MODEL)),
                         "provider": text(cv.first(attrs, cv.PROVIDER))}


def _no_columns(event: dict[str, Any], attrs: dict[str, Any], error: str | None, ctx: AdapterContext) -> None:
    pass


_KIND_COLUMNS = {"llm_call": _llm_call, "tool_call": _tool_call, "delegation": _delegation}
# tracewh.<column> attribute -> (column, its type's conversion), in the columns' order
CARRIED_ATTRIBUTES = {cv.COLUMN_PREFIX + column: (column, integer if column in cv.INTEGER_COLUMNS
                                                  else number if column in cv.NUMBER_COLUMNS else text)
                      for column in cv.CARRIED_COLUMNS}


def _carried_columns(attrs: dict[str, Any]) -> dict[str, Any]:
    """Columns tracewh wrote as `tracewh.<column>` attributes (export-otlp), typed."""
    if CARRIED_ATTRIBUTES.keys().isdisjoint(attrs):  # spans tracewh did not export carry none
        return {}
    carried = {}
    for name, (column, convert) in CARRIED_ATTRIBUTES.items():
        value = attrs.get(name)
        if value is not None and (typed := convert(value)) is not None:
            carried[column] = typed
    return carried


def _carried_payload(attrs: dict[str, Any], origin: Origin) -> dict[str, Any]:
    value = attrs[cv.PAYLOAD_ATTR]
    try:
        payload = orjson.loads(value) if isinstance(value, str) else value
    except orjson.JSONDecodeError:
        raise origin.error("not JSON text", cv.PAYLOAD_ATTR) from None
    if not isinstance(payload, dict):
        raise origin.error("expected a JSON object", cv.PAYLOAD_ATTR)
    return payload
