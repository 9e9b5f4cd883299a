"""The OTLP adapter's output pinned byte for byte (ingest/adapters/otel/), so that making it faster
cannot change it: every event of a fixed set of requests, sent as protobuf and as OTLP/JSON,
against tests/golden/otel_events.jsonl (ids, every column, the payload as the JSON text stored),
and the one-line message of each request refused, from the receiver's check before its 200
(service/otlp.py) and from the commit's mapping.

tests/golden/otel_requests.jsonl holds OTLP/JSON requests written once from tests/otel_spans.py
(genai_agent_spans with seeds 21 and 22 from T0_NS, openinference_openai_spans with seed 23) and
one request `tracewh export-otlp` wrote from the demo store (spans carrying tracewh.* attributes).
`edge_request` adds what those lack: every AnyValue type, span events and links, statuses, a key
sent twice, a span sent twice, a placeholder, carried columns that do not convert.
TRACEWH_UPDATE_GOLDEN=1 rewrites the events file.
"""

from __future__ import annotations

import os
from pathlib import Path

import orjson
import pytest

import otel_spans as ots
from tracewh.errors import BadInputError
from tracewh.ingest.adapters.otel.events import events
from tracewh.ingest.adapters.otel.records import frame, from_json, json_lines_of
from tracewh.ingest.context import AdapterContext
from tracewh.ingest.prices import PriceRegistry
from tracewh.ingest.rows import PAYLOAD_OPTIONS
from tracewh.ingest.sources import memory_source

pytestmark = pytest.mark.skipif(ots.MISSING is not None, reason=ots.MISSING or "")

GOLDEN = Path(__file__).parent / "golden"
T0 = 1_768_471_200_000_000_000
TRACE = bytes(range(1, 17))


def any_value(**field):
    from opentelemetry.proto.common.v1.common_pb2 import AnyValue

    return AnyValue(**field)


def kv(key: str, value=None, **field):
    """A KeyValue: `value` an AnyValue, or the AnyValue of `field` (none: an empty value)."""
    from opentelemetry.proto.common.v1.common_pb2 import KeyValue

    return KeyValue(key=key, value=value if value is not None else any_value(**field))


def array_of(text: str):
    value = any_value()
    value.array_value.values.extend([any_value(string_value=text)])
    return value


def map_of(key: str, text: str):
    value = any_value()
    value.kvlist_value.values.extend([kv(key, string_value=text)])
    return value


def edge_request():
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    request = ExportTraceServiceRequest()
    resource_spans = request.resource_spans.add()
    resource_spans.resource.attributes.extend([kv("service.name", string_value="edge"), kv("tracewh.run_id", int_value=42),
                                               kv("blob", bytes_value=b"\x00\xffab")])
    scope_spans = resource_spans.scope_spans.add()
    scope_spans.scope.name = "edge-scope"
    scope_spans.scope.attributes.extend([kv("scope.attr", bool_value=True)])

    def span(i: int, name: str, attributes: list, **fields):
        added = scope_spans.spans.add(trace_id=TRACE, span_id=bytes([0, 0, 0, 0, 0, 0, 1, i]), name=name,
                                      start_time_unix_nano=T0 + i * 1_000_123, end_time_unix_nano=T0 + i * 3_000_777,
                                      **fields)
        added.attributes.extend(attributes)
        return added

    nested = any_value()
    nested.kvlist_value.values.extend([kv("nan", double_value=float("nan")), kv("inf", double_value=float("inf")),
                                       kv("half", double_value=2.5), kv("empty")])
    mixed = any_value()
    mixed.array_value.values.extend([any_value(int_value=1), any_value(string_value="x"), nested, any_value()])
    chat = span(1, "chat weird", [kv("gen_ai.operation.name", string_value="CHAT"), kv("twice", int_value=1),
                                  kv("twice", int_value=2), kv("nested", mixed),
                                  kv("gen_ai.usage.input_tokens", string_value=" 123"),
                                  kv("gen_ai.usage.output_tokens", double_value=12.0),
                                  kv("llm.token_count.prompt_details.cache_read", string_value="-3"),
                                  kv("llm.finish_reason", string_value="length"), kv("llm.cost.total", string_value="0.5"),
                                  kv("llm.model_name", string_value="gpt-x"), kv("agent.name", int_value=7),
                                  kv("error.type", string_value="")],
                kind=3, parent_span_id=bytes(8), trace_state="a=b", dropped_attributes_count=2, dropped_links_count=1)
    chat.status.code, chat.status.message = 2, "boom"
    chat.events.add(name="exception", time_unix_nano=T0 + 123_456_789).attributes.extend(
        [kv("exception.type", string_value="ValueError")])
    chat.events.add(name="no-time")
    chat.links.add(trace_id=TRACE, span_id=b"\x01" * 8).attributes.extend([kv("l", bool_value=False)])
    span(2, "execute_tool  my_tool ", [kv("openinference.span.kind", string_value="tool"),
                                       kv("input.value", string_value="{bad json"),
                                       kv("output.value", string_value="[1, 2]"), kv("tool.id", int_value=5)],
         parent_span_id=bytes([0, 0, 0, 0, 0, 0, 1, 1]))
    span(3, "execute_tool", [kv("gen_ai.operation.name", string_value="execute_tool")])
    agent = span(4, "", [kv("gen_ai.operation.name", string_value="invoke_agent"), kv("agent.name", string_value="A"),
                         kv("llm.model_name", string_value="m"), kv("llm.system", string_value="sys"),
                         kv("tracewh.payload", string_value='{"x": 1, "name": "over"}'),
                         kv("tracewh.kind", string_value="nope"), kv("tracewh.seq", string_value="12"),
                         kv("tracewh.cost_usd", string_value="oops")], kind=5)
    agent.status.code = 1
    span(5, "placeholder", [kv("tracewh.placeholder", bool_value=True)])
    span(6, "synthetic", [kv("tracewh.synthetic_time", bool_value=True), kv("tracewh.kind", string_value="llm_call"),
                          kv("tracewh.event_id", string_value="ev-1"), kv("tracewh.model", string_value="mm"),
                          kv("extra.added", string_value="by a collector")])
    untimed = span(7, "no start", [kv("openinference.span.kind", string_value="LLM"),
                                   kv("gen_ai.response.finish_reasons", string_value="")])
    untimed.start_time_unix_nano, untimed.status.code = 0, 2
    span(8, "chat gpt-4o", [kv("gen_ai.operation.name", string_value="chat"),  # costed from the price table
                            kv("gen_ai.response.model", string_value="gpt-4o-2024-08-06"),
                            kv("gen_ai.usage.input_tokens", int_value=1000),
                            kv("gen_ai.usage.output_tokens", int_value=200),
                            kv("gen_ai.usage.cache_read.input_tokens", int_value=100),
                            kv("gen_ai.response.finish_reasons", value=array_of("stop"))], kind=3)
    scope_spans.spans.add().CopyFrom(scope_spans.spans[0])  # a span sent twice is one event
    other = request.resource_spans.add()
    other.resource.attributes.extend([kv("tracewh.benchmark", string_value="bx")])
    plain = other.scope_spans.add().spans.add(trace_id=TRACE, span_id=b"\x09" * 8, name="plain", start_time_unix_nano=5)
    plain.attributes.extend([kv("gen_ai.operation.name", int_value=3)])
    versioned = other.scope_spans.add()
    versioned.scope.version = "v9"
    versioned.spans.add(trace_id=TRACE, span_id=b"\x0a" * 8, name="empty")
    return request


def event_lines(fmt: str, data: bytes) -> str:
    """Each event the adapter maps from `data` as one JSON line, its payload as the text stored."""
    file = memory_source("tests", "requests", data).files[0]  # one name for both encodings: same `source`
    ctx = AdapterContext(prices=PriceRegistry())  # the built-in prices, not a prices.json of the machine
    out = []
    for line, event in events(fmt, file, ctx):
        payload = None if event["payload"] is None else orjson.dumps(event["payload"], option=PAYLOAD_OPTIONS).decode()
        row = {"line": line, **event, "payload": payload}
        out.append(orjson.dumps(row, option=orjson.OPT_SORT_KEYS).decode() + "\n")
    return "".join(out)


def test_events_are_the_golden_ones_from_protobuf_and_from_json():
    lines = (GOLDEN / "otel_requests.jsonl").read_text().splitlines() + [ots.otlp_json_line(edge_request())]
    as_protobuf = event_lines("otlp-proto", frame(from_json(orjson.loads(line), "golden").SerializeToString()
                                                  for line in lines))
    as_json = event_lines("otlp-json", json_lines_of(line.encode() for line in lines))
    path = GOLDEN / "otel_events.jsonl"
    if os.environ.get("TRACEWH_UPDATE_GOLDEN") == "1":
        path.write_text(as_protobuf)
    assert as_protobuf.count("\n") == 39
    assert as_protobuf == path.read_text(), f"differs from {path} (TRACEWH_UPDATE_GOLDEN=1 rewrites it)"
    assert as_json == as_protobuf


def one_span(*attributes, resource=(), **fields) -> bytes:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    request = ExportTraceServiceRequest()
    resource_spans = request.resource_spans.add()
    resource_spans.resource.attributes.extend(resource)
    span = resource_spans.scope_spans.add().spans.add(trace_id=TRACE, span_id=b"\x01" * 8, name="s",
                                                      start_time_unix_nano=10, end_time_unix_nano=20)
    for name, value in fields.items():
        setattr(span, name, value)
    span.attributes.extend(attributes)
    return request.SerializeToString()


BIG = 10**13
OVER = "tokens is over the 1,000,000,000,000-token limit of one span (a broken counter?)"
SPAN = "span 0101010101010101: "
# (request, the receiver's 400 (None: it takes the request), the commit's refusal), both after "... field 'X': "
REFUSED = {
    "kind": (one_span(kind=9), "kind", SPAN + "kind 9 is not a SpanKind (0-5)"),
    "ends before it starts": (one_span(end_time_unix_nano=5), "endTimeUnixNano",
                              SPAN + "ends before it starts (endTimeUnixNano 5 < startTimeUnixNano 10)"),
    "int64 max tokens": (one_span(kv("gen_ai.usage.input_tokens", int_value=2**63 - 1)), "gen_ai.usage.input_tokens",
                         f"{SPAN}9223372036854775807 {OVER}"),
    "tokens as text": (one_span(kv("tracewh.prompt_tokens", string_value=str(BIG))), "tracewh.prompt_tokens",
                       f"{SPAN}{BIG} {OVER}"),
    "tokens as a double": (one_span(kv("llm.token_count.completion", double_value=1e13)), "llm.token_count.completion",
                           f"{SPAN}{BIG} {OVER}"),
    "the first of two big counts": (one_span(kv("llm.token_count.prompt", string_value="2000000000000"),
                                             kv("gen_ai.usage.output_tokens", int_value=BIG)),
                                    "llm.token_count.prompt", f"{SPAN}2000000000000 {OVER}"),
    # a key sent twice: every value it was sent with is checked, not only the one kept
    "a big count sent first, then a small one": (
        one_span(kv("gen_ai.usage.input_tokens", int_value=BIG), kv("gen_ai.usage.input_tokens", int_value=5)),
        "gen_ai.usage.input_tokens", f"{SPAN}{BIG} {OVER}"),
    "another key sent twice": (one_span(kv("a", int_value=1), kv("a", int_value=2),
                                        kv("gen_ai.usage.output_tokens", int_value=BIG)),
                               "gen_ai.usage.output_tokens", f"{SPAN}{BIG} {OVER}"),
    "a run id that is a list": (one_span(resource=[kv("tracewh.run_id", array_of("a"))]), "tracewh.run_id",
                                "resource attribute tracewh.run_id is a list, not a name: send one string"),
    "a benchmark that is a map": (one_span(resource=[kv("tracewh.benchmark", map_of("a", "b"))]), "tracewh.benchmark",
                                  "resource attribute tracewh.benchmark is a map, not a name: send one string"),
}
# taken by the receiver (its check does not map spans), refused by the commit's mapping
REFUSED_AT_COMMIT = {
    "a short trace id": (one_span(trace_id=b"\x01" * 8), "traceId", "an id of 16 bytes is required, got 8"),
    "an all-zero span id": (one_span(span_id=bytes(8)), "spanId", "an all-zero id is not a valid id"),
    "no span id": (one_span(span_id=b""), "spanId", "an id of 8 bytes is required, got 0"),
    "a short parent id": (one_span(parent_span_id=b"\x01" * 4), "parentSpanId", "a parent span id has 8 bytes, got 4"),
    "a carried payload that is not JSON": (one_span(kv("tracewh.payload", string_value="{x")), "tracewh.payload",
                                           "not JSON text"),
    "a carried payload that is a list": (one_span(kv("tracewh.payload", string_value="[1]")), "tracewh.payload",
                                         "expected a JSON object"),
}


def receiver_answer(body: bytes) -> str | None:
    """What the receiver's check (the function POST /v1/traces calls before spooling) says, None when it takes it."""
    from fastapi import HTTPException

    from tracewh.service.otlp import MAX_BODY_BYTES, _decode

    try:
        _decode(body, {"content-type": "application/x-protobuf"}, MAX_BODY_BYTES)
    except HTTPException as e:
        assert e.status_code == 400
        return e.detail
    return None


def commit_refusal(body: bytes) -> str:
    with pytest.raises(BadInputError) as refused:
        event_lines("otlp-proto", frame([body]))
    return str(refused.value)


@pytest.mark.parametrize("case", REFUSED, ids=list(REFUSED))
def test_refused_before_the_200_and_at_the_commit_with_one_message(case):
    body, field, problem = REFUSED[case]
    assert receiver_answer(body) == f"request body, field '{field}': {problem}"
    assert commit_refusal(body) == f"tests, line 1, field '{field}': {problem}"


@pytest.mark.parametrize("case", REFUSED_AT_COMMIT, ids=list(REFUSED_AT_COMMIT))
def test_refused_by_the_mapping_only(case):
    body, field, problem = REFUSED_AT_COMMIT[case]
    assert receiver_answer(body) is None
    assert commit_refusal(body) == f"tests, line 1, field '{field}': {problem}"
