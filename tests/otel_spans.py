"""Real OpenTelemetry spans for the OTLP tests, made by the OpenTelemetry Python SDK, with no network.

Two producers and a few writers (docs/formats/otel.md says what the formats are):

- `genai_agent_spans(provider)`: an agent run under the OpenTelemetry GenAI semantic conventions
  (`invoke_agent` > `chat`, `execute_tool`, a plain span, one ERROR span), one trace per task.
- `openinference_openai_spans(provider)`: a real `openai.OpenAI` client instrumented by
  OpenInference's `OpenAIInstrumentor`, answered by a fake HTTP transport, inside manual
  OpenInference CHAIN > AGENT > (LLM, TOOL, LLM) spans.
- `otlp_request` / `otlp_json_dict` / `write_otlp_json_lines` / `write_otlp_proto_file`: the OTLP
  encodings, the JSON one as the OTLP spec and the Collector's file exporter write it.
- `otlp_http_exporter`: the SDK's own OTLP/HTTP exporter, to POST real requests to a receiver.

Each producer returns what it sent (trace and span ids as lowercase hex, names, parents, token
counts, attributes) so a test can compare it with what came out of tracewh.

The project venv does not carry the OpenTelemetry SDK: `MISSING` is None when everything imports,
else a sentence to hand to `pytest.skip`. Needs opentelemetry-sdk, opentelemetry-proto,
opentelemetry-exporter-otlp-proto-http (brings -proto-common), and for the OpenInference producer
openinference-instrumentation-openai, openai and (openai>=3) httpx2.

    python tests/otel_spans.py OUT_DIR     # writes sample files of every format into OUT_DIR
"""

from __future__ import annotations

import base64
import json
import random
import struct
import sys
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

MISSING: str | None = None
try:
    from google.protobuf import json_format
    from opentelemetry import trace as trace_api
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.sdk.trace.id_generator import IdGenerator
    from opentelemetry.trace import SpanKind, Status, StatusCode
except ImportError as exc:  # pragma: no cover - depends on the environment
    MISSING = f"the OpenTelemetry SDK and OTLP packages are not installed (no module {exc.name!r}); see tests/otel_spans.py"
    IdGenerator = object  # so the class below still defines

GENAI_SCOPE = "tracewh.tests.genai"
OI_SCOPE = "tracewh.tests.openinference"
T0_NS = 1_768_471_200_000_000_000  # 2026-01-15T10:00:00Z, the sample files' start time
MS = 1_000_000  # nanoseconds in a millisecond


def _require() -> None:
    if MISSING:
        raise ImportError(MISSING)


def hex_trace_id(trace_id: int) -> str:
    return format(trace_id, "032x")


def hex_span_id(span_id: int) -> str:
    return format(span_id, "016x")


# --- providers ---------------------------------------------------------------------------------


class SeededIds(IdGenerator):
    """Trace and span ids from a seeded generator, so sample files come out the same each run."""

    def __init__(self, seed: int) -> None:
        self._rng = random.Random(seed)

    def generate_span_id(self) -> int:
        return self._rng.getrandbits(64) or 1

    def generate_trace_id(self) -> int:
        return self._rng.getrandbits(128) or 1


def make_provider(*, service_name: str | None = "tracewh-test-agent", benchmark: str | None = None,
                  run_id: str | None = None, resource: dict | None = None, seed: int | None = None,
                  exporters: Sequence[Any] = ()) -> tuple[TracerProvider, InMemorySpanExporter]:
    """A TracerProvider with an in-memory exporter (returned) and any further exporters.

    The resource is the SDK's default one (telemetry.sdk.*, a random service.instance.id) plus
    service.name, tracewh.benchmark and tracewh.run_id when given, plus `resource`. With `seed`,
    ids are reproducible and service.instance.id is fixed. Beware OTEL_RESOURCE_ATTRIBUTES and
    OTEL_SERVICE_NAME in the environment: Resource.create merges them in.
    """
    _require()
    attrs: dict[str, Any] = {}
    if service_name is not None:
        attrs["service.name"] = service_name
    if benchmark is not None:
        attrs["tracewh.benchmark"] = benchmark
    if run_id is not None:
        attrs["tracewh.run_id"] = run_id
    if seed is not None:
        attrs["service.instance.id"] = f"seed-{seed}"
    attrs |= resource or {}
    kwargs = {"id_generator": SeededIds(seed)} if seed is not None else {}
    provider = TracerProvider(resource=Resource.create(attrs), **kwargs)
    memory = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    for exporter in exporters:
        provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, memory


def otlp_http_exporter(endpoint: str, *, gzip: bool = False, headers: dict[str, str] | None = None,
                       timeout: float = 5.0) -> SpanExporter:
    """The SDK's OTLP/HTTP protobuf exporter, pointed at `endpoint` (the full URL, /v1/traces included).

    Pass it in make_provider(exporters=[...]): each finished span is then POSTed as it ends
    (SimpleSpanProcessor), one ExportTraceServiceRequest per span.
    """
    _require()
    from opentelemetry.exporter.otlp.proto.http import Compression
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    return OTLPSpanExporter(endpoint=endpoint, headers=headers, timeout=timeout,
                            compression=Compression.Gzip if gzip else Compression.NoCompression)


# --- GenAI semantic conventions ----------------------------------------------------------------


@contextmanager
def _span(tracer, name: str, start: int, end: int, kind=None, attributes: dict | None = None) -> Iterator[Any]:
    """A span with given start and end times, current inside the block."""
    span = tracer.start_span(name, kind=kind or SpanKind.INTERNAL, attributes=attributes, start_time=start)
    with trace_api.use_span(span, end_on_exit=False):
        yield span
    span.end(end_time=end)


def _plain(value: Any) -> Any:
    """Attribute values as JSON (tuples to lists), for the returned record."""
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _record(span, name: str, role: str, kind, attributes: dict, status: str = "UNSET") -> dict:
    ctx, parent = span.get_span_context(), span.parent
    return {"name": name, "role": role, "span_id": hex_span_id(ctx.span_id),
            "parent_span_id": hex_span_id(parent.span_id) if parent else None,
            "kind": kind.name, "status": status, "attributes": _plain(attributes)}


def genai_agent_spans(provider: TracerProvider, *, tasks: Sequence[str] = ("task-001",),
                      agent_name: str = "weather-agent", model: str = "o4-mini",
                      response_model: str = "o4-mini-2025-04-16", t0_ns: int | None = None,
                      legacy_attributes: bool = False, agent_usage: bool = True) -> dict:
    """One agent run per task, under the GenAI semantic conventions, each its own trace.

    Per task (6 spans), times in ms after the task's start:

        invoke_agent {agent_name}      INTERNAL  0-4000    gen_ai.operation.name=invoke_agent
          chat {model}                 CLIENT    10-1210   finish_reasons ["tool_calls"], two tool calls
          execute_tool get_weather     INTERNAL  1220-1300 arguments/result as structured attributes
          execute_tool search_docs     INTERNAL  1310-2310 status ERROR, error.type, exception event
          agent_turn                   INTERNAL  2320-3990 plain span: no gen_ai.* attribute
            chat {model}               CLIENT    2330-3830 finish_reasons ["stop"], content as JSON strings

    The first chat carries gen_ai.system_instructions / input / output messages as structured
    attributes (arrayValue of kvlistValue on the wire); the second carries them as JSON strings,
    the other form the conventions allow. gen_ai.response.finish_reasons holds the provider's
    value ("tool_calls"); the output message's finish_reason the message schema's ("tool_call"). `legacy_attributes` swaps in the pre-1.37 names
    (gen_ai.system, gen_ai.usage.prompt_tokens / completion_tokens) on the chat spans.
    `agent_usage` puts the run's summed usage on the invoke_agent span too, as the conventions
    recommend: whoever sums tokens over all spans counts them twice.

    Returns {"resource", "traces": [{"task_id", "trace_id", "spans": [...]}], "tokens",
    "span_count"}; each span record has name, role (agent|chat|tool|plain), span_id,
    parent_span_id, kind, status and the attributes set. "tokens" sums the chat spans only.
    """
    _require()
    tracer = provider.get_tracer(GENAI_SCOPE, "1.0.0")
    t0 = time.time_ns() if t0_ns is None else t0_ns
    provider_key = "gen_ai.system" if legacy_attributes else "gen_ai.provider.name"
    in_key = "gen_ai.usage.prompt_tokens" if legacy_attributes else "gen_ai.usage.input_tokens"
    out_key = "gen_ai.usage.completion_tokens" if legacy_attributes else "gen_ai.usage.output_tokens"
    totals = {"input_tokens": 0, "output_tokens": 0, "cache_read_input_tokens": 0, "reasoning_output_tokens": 0}
    traces = []
    for i, task in enumerate(tasks):
        base = t0 + i * 10_000 * MS
        at = lambda ms: base + ms * MS  # noqa: E731
        usage = [(1200 + 10 * i, 85 + i, 1024, 40), (1350 + 10 * i, 60 + i, 1152, 16)]  # in, out, cached, reasoning
        spans: list[dict] = []
        agent_attrs = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": agent_name,
                       "gen_ai.agent.id": f"agent-{agent_name}-v1", "gen_ai.agent.description": "Answers weather questions",
                       "gen_ai.provider.name": "openai", "gen_ai.request.model": model,
                       "gen_ai.conversation.id": task}
        with _span(tracer, f"invoke_agent {agent_name}", at(0), at(4000), SpanKind.INTERNAL, agent_attrs) as agent:
            if agent_usage:
                agent_attrs |= {"gen_ai.usage.input_tokens": sum(u[0] for u in usage),
                                "gen_ai.usage.output_tokens": sum(u[1] for u in usage)}
                agent.set_attributes({k: agent_attrs[k] for k in ("gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens")})
            spans.append(_record(agent, f"invoke_agent {agent_name}", "agent", SpanKind.INTERNAL, agent_attrs))

            calls = [{"type": "tool_call", "id": f"call_{task}_1", "name": "get_weather", "arguments": {"city": "Paris"}},
                     {"type": "tool_call", "id": f"call_{task}_2", "name": "search_docs",
                      "arguments": {"query": "Paris weather advisories"}}]
            chat1 = {"gen_ai.operation.name": "chat", provider_key: "openai", "gen_ai.request.model": model,
                     "gen_ai.request.max_tokens": 2048, "server.address": "api.openai.com", "server.port": 443,
                     "gen_ai.response.model": response_model, "gen_ai.response.id": f"chatcmpl-{task}-1",
                     "gen_ai.response.finish_reasons": ("tool_calls",),
                     in_key: usage[0][0], out_key: usage[0][1],
                     "gen_ai.usage.cache_read.input_tokens": usage[0][2],
                     "gen_ai.usage.reasoning.output_tokens": usage[0][3],
                     "gen_ai.system_instructions": [{"type": "text", "content": "You are a weather agent."}],
                     "gen_ai.input.messages": [{"role": "user", "parts": [
                         {"type": "text", "content": "What's the weather in Paris, and any advisories?"}]}],
                     "gen_ai.output.messages": [{"role": "assistant", "parts": calls, "finish_reason": "tool_call"}]}
            with _span(tracer, f"chat {model}", at(10), at(1210), SpanKind.CLIENT, chat1) as span:
                spans.append(_record(span, f"chat {model}", "chat", SpanKind.CLIENT, chat1))

            tool1 = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather",
                     "gen_ai.tool.call.id": calls[0]["id"], "gen_ai.tool.type": "function",
                     "gen_ai.tool.description": "Current weather for a city",
                     "gen_ai.tool.call.arguments": {"city": "Paris"},
                     "gen_ai.tool.call.result": {"temp_c": 14, "conditions": "cloudy"}}
            with _span(tracer, "execute_tool get_weather", at(1220), at(1300), SpanKind.INTERNAL, tool1) as span:
                spans.append(_record(span, "execute_tool get_weather", "tool", SpanKind.INTERNAL, tool1))

            tool2 = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "search_docs",
                     "gen_ai.tool.call.id": calls[1]["id"], "gen_ai.tool.type": "datastore",
                     "gen_ai.tool.call.arguments": json.dumps(calls[1]["arguments"])}
            with _span(tracer, "execute_tool search_docs", at(1310), at(2310), SpanKind.INTERNAL, tool2) as span:
                error = TimeoutError("search_docs: upstream timed out after 1.0s")
                span.record_exception(error, timestamp=at(2309))
                span.set_attribute("error.type", "TimeoutError")
                span.set_status(Status(StatusCode.ERROR, str(error)))
                rec = _record(span, "execute_tool search_docs", "tool", SpanKind.INTERNAL,
                              tool2 | {"error.type": "TimeoutError"}, status="ERROR")
                rec["status_message"] = str(error)
                spans.append(rec)

            plain = {"app.turn": 2, "app.step": "compose_answer"}
            with _span(tracer, "agent_turn", at(2320), at(3990), SpanKind.INTERNAL, plain) as turn:
                spans.append(_record(turn, "agent_turn", "plain", SpanKind.INTERNAL, plain))
                history = [{"role": "user", "parts": [{"type": "text", "content": "What's the weather in Paris, and any advisories?"}]},
                           {"role": "assistant", "parts": calls},
                           {"role": "tool", "parts": [{"type": "tool_call_response", "id": calls[0]["id"],
                                                       "response": {"temp_c": 14, "conditions": "cloudy"}}]},
                           {"role": "tool", "parts": [{"type": "tool_call_response", "id": calls[1]["id"],
                                                       "response": "error: timeout"}]}]
                answer = "It is 14 °C and cloudy in Paris; I could not check advisories."
                chat2 = {"gen_ai.operation.name": "chat", provider_key: "openai", "gen_ai.request.model": model,
                         "gen_ai.response.model": response_model, "gen_ai.response.id": f"chatcmpl-{task}-2",
                         "gen_ai.response.finish_reasons": ("stop",), in_key: usage[1][0], out_key: usage[1][1],
                         "gen_ai.usage.cache_read.input_tokens": usage[1][2],
                         "gen_ai.usage.reasoning.output_tokens": usage[1][3],
                         "gen_ai.input.messages": json.dumps(history),
                         "gen_ai.output.messages": json.dumps([{"role": "assistant", "finish_reason": "stop",
                                                                "parts": [{"type": "text", "content": answer}]}])}
                with _span(tracer, f"chat {model}", at(2330), at(3830), SpanKind.CLIENT, chat2) as span:
                    spans.append(_record(span, f"chat {model}", "chat", SpanKind.CLIENT, chat2))
        for u in usage:
            for key, value in zip(totals, u):
                totals[key] += value
        traces.append({"task_id": task, "trace_id": hex_trace_id(agent.get_span_context().trace_id),
                       "start_ns": base, "spans": spans})
    return {"convention": "genai", "scope": GENAI_SCOPE, "resource": _plain(dict(provider.resource.attributes)),
            "traces": traces, "tokens": totals, "span_count": sum(len(t["spans"]) for t in traces)}


# --- OpenInference -----------------------------------------------------------------------------

OI_BASE_URL = "https://api.openai.com/v1"  # never reached: the transport below answers


def _chat_completion(n: int, model: str, message: dict, finish: str, usage: tuple[int, int, int, int]) -> dict:
    """A chat completion body as the OpenAI API returns it."""
    prompt, completion, cached, reasoning = usage
    return {"id": f"chatcmpl-oi-{n}", "object": "chat.completion", "created": 1_768_471_200 + n, "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "refusal": None, "annotations": [], **message},
                         "logprobs": None, "finish_reason": finish}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion,
                      "prompt_tokens_details": {"cached_tokens": cached, "audio_tokens": 0},
                      "completion_tokens_details": {"reasoning_tokens": reasoning, "audio_tokens": 0,
                                                    "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}},
            "service_tier": "default", "system_fingerprint": "fp_tracewh"}


def _httpx_module():
    """The httpx the installed openai speaks: httpx2 for openai>=3 (httpx also accepted), httpx before."""
    import openai
    if int(openai.__version__.split(".")[0]) >= 3:
        import httpx2
        return httpx2
    import httpx
    return httpx


def openinference_openai_spans(provider: TracerProvider, *, task_id: str = "task-001", model: str = "o4-mini",
                               response_model: str = "o4-mini-2025-04-16", genai_semconv: bool = False) -> dict:
    """An OpenInference-instrumented openai client over a fake transport, inside manual OpenInference spans.

        agent_run        CHAIN  (manual)   input.value = the question, output.value = the answer
          weather-agent  AGENT  (manual)   agent.name
            ChatCompletion LLM  (instrumentor) answers with one tool call (finish tool_calls)
            get_weather  TOOL   (manual)   tool.name, tool.id = the call id, input/output.value
            ChatCompletion LLM  (instrumentor) answers in text (finish stop)

    All OpenTelemetry span kinds are INTERNAL (OpenInference's kind is the attribute
    openinference.span.kind). Every span carries session.id = task_id (using_session). With
    `genai_semconv`, OpenInference also writes GenAI attributes (TraceConfig.enable_genai_semconv).
    The instrumentor patches openai.OpenAI.request for the whole process; it is undone on return.

    Returns {"trace_id", "task_id", "spans": [{name, openinference_span_kind, span_id,
    parent_span_id}], "llm_calls": [what each fake response said: model, tokens, finish],
    "requests": [what the client POSTed], "tool_call_id", "tokens"}.
    """
    _require()
    import openai
    from openinference.instrumentation import OITracer, TraceConfig, capture_span_context, using_session
    from openinference.instrumentation.openai import OpenAIInstrumentor
    from openinference.semconv.trace import SpanAttributes

    httpx = _httpx_module()
    call_id = f"call_{task_id}_weather"
    replies = [
        _chat_completion(1, response_model, {"content": None, "tool_calls": [
            {"id": call_id, "type": "function",
             "function": {"name": "get_weather", "arguments": json.dumps({"city": "Paris"})}}]},
            "tool_calls", (57, 18, 32, 10)),
        _chat_completion(2, response_model, {"content": "It is 14 °C and cloudy in Paris."}, "stop", (95, 12, 64, 0)),
    ]
    requests: list[dict] = []

    def answer(request):
        requests.append({"method": request.method, "url": str(request.url), "json": json.loads(request.content)})
        return httpx.Response(200, json=replies[len(requests) - 1], headers={"x-request-id": f"req_{len(requests)}"})

    config = TraceConfig(enable_genai_semconv=genai_semconv)
    instrumentor = OpenAIInstrumentor()
    if instrumentor.is_instrumented_by_opentelemetry:
        instrumentor.uninstrument()
    instrumentor.instrument(tracer_provider=provider, config=config)
    tracer = OITracer(provider.get_tracer(OI_SCOPE, "1.0.0"), config=config)
    client = openai.OpenAI(api_key="sk-test", base_url=OI_BASE_URL, max_retries=0,
                           http_client=httpx.Client(transport=httpx.MockTransport(answer)))
    tool_schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    tools = [{"type": "function", "function": {"name": "get_weather", "description": "Current weather for a city",
                                               "parameters": tool_schema}}]
    question = "What's the weather in Paris?"
    messages: list[dict] = [{"role": "system", "content": "You are a weather agent."},
                            {"role": "user", "content": question}]
    spans: list[dict] = []

    def note(name: str, kind: str, ctx, parent) -> None:
        spans.append({"name": name, "openinference_span_kind": kind, "span_id": hex_span_id(ctx.span_id),
                      "parent_span_id": hex_span_id(parent.span_id) if parent else None})

    try:
        with using_session(task_id), capture_span_context() as captured:
            with tracer.start_as_current_span("agent_run", openinference_span_kind="chain") as chain:
                chain.set_input(question)
                with tracer.start_as_current_span("weather-agent", openinference_span_kind="agent") as agent:
                    agent.set_attribute(SpanAttributes.AGENT_NAME, "weather-agent")
                    agent.set_input(question)
                    first = client.chat.completions.create(model=model, messages=messages, tools=tools)
                    call = first.choices[0].message.tool_calls[0]
                    with tracer.start_as_current_span("get_weather", openinference_span_kind="tool") as tool:
                        tool.set_tool(name="get_weather", description="Current weather for a city", parameters=tool_schema)
                        tool.set_attribute(SpanAttributes.TOOL_ID, call.id)
                        tool.set_input(call.function.arguments, mime_type="application/json")
                        result = json.dumps({"temp_c": 14, "conditions": "cloudy"})
                        tool.set_output(result, mime_type="application/json")
                    messages += [first.choices[0].message.model_dump(exclude_none=True),
                                 {"role": "tool", "tool_call_id": call.id, "content": result}]
                    final = client.chat.completions.create(model=model, messages=messages, tools=tools)
                    text = final.choices[0].message.content
                    agent.set_output(text)
                chain.set_output(text)
            contexts = list(captured.get_span_contexts())  # in start order: chain, agent, llm, tool, llm
    finally:
        instrumentor.uninstrument()
        client.close()
    chain_ctx, agent_ctx, llm1, tool_ctx, llm2 = contexts
    note("agent_run", "CHAIN", chain_ctx, None)
    note("weather-agent", "AGENT", agent_ctx, chain_ctx)
    note("ChatCompletion", "LLM", llm1, agent_ctx)
    note("get_weather", "TOOL", tool_ctx, agent_ctx)
    note("ChatCompletion", "LLM", llm2, agent_ctx)
    llm_calls = []
    for reply in replies:
        u = reply["usage"]
        llm_calls.append({"model": model, "response_model": reply["model"], "prompt_tokens": u["prompt_tokens"],
                          "completion_tokens": u["completion_tokens"], "total_tokens": u["total_tokens"],
                          "cached_tokens": u["prompt_tokens_details"]["cached_tokens"],
                          "reasoning_tokens": u["completion_tokens_details"]["reasoning_tokens"],
                          "finish_reason": reply["choices"][0]["finish_reason"]})
    tokens = {k: sum(c[k] for c in llm_calls) for k in ("prompt_tokens", "completion_tokens", "cached_tokens", "reasoning_tokens")}
    return {"convention": "openinference", "scope": OI_SCOPE, "resource": _plain(dict(provider.resource.attributes)),
            "task_id": task_id, "trace_id": hex_trace_id(chain_ctx.trace_id), "spans": spans,
            "llm_calls": llm_calls, "requests": requests, "tool_call_id": call_id, "tokens": tokens,
            "span_count": len(spans)}


# --- OTLP encodings ----------------------------------------------------------------------------

_HEX_ID_FIELDS = frozenset({"traceId", "spanId", "parentSpanId"})


def otlp_request(spans: Sequence[ReadableSpan]) -> ExportTraceServiceRequest:
    """The ExportTraceServiceRequest the SDK's OTLP exporters send for these spans."""
    _require()
    return encode_spans(spans)


def otlp_requests(spans: Sequence[ReadableSpan], batch_size: int) -> list[ExportTraceServiceRequest]:
    """The spans in requests of at most batch_size spans, as a BatchSpanProcessor would send them."""
    return [otlp_request(spans[i:i + batch_size]) for i in range(0, len(spans), batch_size)]


def _hex_ids(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: (base64.b64decode(v).hex() if k in _HEX_ID_FIELDS and isinstance(v, str) else _hex_ids(v))
                for k, v in node.items()}
    if isinstance(node, list):
        return [_hex_ids(v) for v in node]
    return node


def otlp_json_dict(request: ExportTraceServiceRequest) -> dict:
    """The request in OTLP/JSON: protobuf's JSON mapping with the OTLP deviations.

    MessageToDict already gives lowerCamelCase keys, int64/fixed64 as decimal strings and drops
    default values; asked for, enums come as integers. Left to fix: trace and span ids, which
    MessageToDict writes as base64 (every bytes field) and OTLP/JSON wants as hex (lowercase here,
    as the Collector writes them). Other bytes (AnyValue.bytesValue) stay base64.
    """
    _require()
    return _hex_ids(json_format.MessageToDict(request, use_integers_for_enums=True))


def otlp_json_line(request: ExportTraceServiceRequest) -> str:
    """One line of a Collector file-exporter JSON file: compact, no newline inside."""
    return json.dumps(otlp_json_dict(request), separators=(",", ":"), ensure_ascii=False)


def write_otlp_json_lines(path: Path | str, requests: Iterable[ExportTraceServiceRequest]) -> Path:
    """Writes requests as the Collector's file exporter does with format json: one object, then "\\n"."""
    path = Path(path)
    with path.open("w", encoding="utf-8", newline="\n") as out:
        for request in requests:
            out.write(otlp_json_line(request) + "\n")
    return path


def write_otlp_proto_file(path: Path | str, requests: Iterable[ExportTraceServiceRequest]) -> Path:
    """Writes requests as the Collector's file exporter does with format proto (no compression):
    each serialized message preceded by its length as a 4-byte big-endian unsigned integer."""
    path = Path(path)
    with path.open("wb") as out:
        for request in requests:
            body = request.SerializeToString()
            out.write(struct.pack(">I", len(body)) + body)
    return path


def read_otlp_proto_file(path: Path | str) -> list[ExportTraceServiceRequest]:
    """Reads back a file written by write_otlp_proto_file (for checking the writer)."""
    _require()
    data, requests, at = Path(path).read_bytes(), [], 0
    while at < len(data):
        (size,) = struct.unpack_from(">I", data, at)
        requests.append(ExportTraceServiceRequest.FromString(data[at + 4:at + 4 + size]))
        at += 4 + size
    return requests


def span_count(requests: Iterable[ExportTraceServiceRequest]) -> int:
    return sum(len(ss.spans) for r in requests for rs in r.resource_spans for ss in rs.scope_spans)


# --- samples -----------------------------------------------------------------------------------


def write_samples(out: Path | str, *, seed: int = 7) -> dict[str, Path]:
    """Writes one sample of each format for each producer into `out`; returns the paths by name."""
    _require()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    written: dict[str, Path] = {}

    provider, memory = make_provider(benchmark="custom", run_id="otel-sample-genai", seed=seed)
    sent = genai_agent_spans(provider, tasks=("task-001", "task-002"), t0_ns=T0_NS)
    genai_spans = memory.get_finished_spans()
    provider.shutdown()
    provider, memory = make_provider(benchmark="custom", run_id="otel-sample-openinference", seed=seed + 1,
                                     service_name="tracewh-test-openinference")
    oi_sent = openinference_openai_spans(provider)
    oi_spans = memory.get_finished_spans()
    provider.shutdown()

    for name, spans, record in (("genai", genai_spans, sent), ("openinference", oi_spans, oi_sent)):
        requests = otlp_requests(spans, batch_size=4)  # several lines / frames per file
        written[f"{name}.otlp.jsonl"] = write_otlp_json_lines(out / f"{name}.otlp.jsonl", requests)
        written[f"{name}.otlp.binpb"] = write_otlp_proto_file(out / f"{name}.otlp.binpb", requests)
        body = out / f"{name}.request.binpb"  # one whole request, as an OTLP/HTTP body (no framing)
        body.write_bytes(otlp_request(spans).SerializeToString())
        written[body.name] = body
        request_json = out / f"{name}.request.json"  # the same, as an OTLP/HTTP JSON body
        request_json.write_text(json.dumps(otlp_json_dict(otlp_request(spans)), indent=1, ensure_ascii=False) + "\n")
        written[request_json.name] = request_json
        expected = out / f"{name}.sent.json"
        expected.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n")
        written[expected.name] = expected
        # self-check: both files hold every span
        assert span_count(read_otlp_proto_file(out / f"{name}.otlp.binpb")) == len(spans) == record["span_count"]
        lines = (out / f"{name}.otlp.jsonl").read_text().splitlines()
        assert sum(len(ss["spans"]) for line in lines for rs in json.loads(line)["resourceSpans"]
                   for ss in rs["scopeSpans"]) == len(spans)
    return written


if __name__ == "__main__":
    if MISSING:
        sys.exit(MISSING)
    target = Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/tracewh-otel-samples")
    for label, path in write_samples(target).items():
        print(f"{path}  ({path.stat().st_size} bytes)")
