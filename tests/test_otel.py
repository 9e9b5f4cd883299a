"""OpenTelemetry in and out: real spans from the OpenTelemetry SDK (tests/otel_spans.py), sent by its
own OTLP/HTTP exporter to a real `tracewh serve` on 127.0.0.1, written as the Collector's files,
and a demo store exported as OTLP and ingested again."""

from __future__ import annotations

import gzip
import json
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import httpx
import pytest
from helpers import llm_call, serving, store_version, tracewh, write_native

import otel_spans as ots
import tracewh as tw
from tracewh.ingest.prices import PriceRegistry

pytestmark = pytest.mark.skipif(ots.MISSING is not None, reason=ots.MISSING or "")

TOKEN = "otlp-test-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """One `tracewh serve` with a token for the module; each test sends runs of its own."""
    wh = tmp_path_factory.mktemp("otlp") / "wh"
    with serving(wh, token=TOKEN) as base:
        yield SimpleNamespace(wh=wh, url=f"{base}/v1/traces")


def export(url: str, spans, *, token: str | None = TOKEN, gzip_body: bool = False) -> bool:
    """The SDK's OTLP/HTTP exporter sends `spans` as one request; True when it reported success."""
    exporter = ots.otlp_http_exporter(url, gzip=gzip_body, headers={"Authorization": f"Bearer {token}"} if token else None)
    try:
        return exporter.export(spans).name == "SUCCESS"
    finally:
        exporter.shutdown()


def genai_run(run_id: str, seed: int, **options):
    """GenAI agent spans of two tasks (what was sent, and the finished spans), children first as the SDK ends them."""
    provider, memory = ots.make_provider(run_id=run_id, seed=seed)
    sent = ots.genai_agent_spans(provider, tasks=("task-001", "task-002"), t0_ns=ots.T0_NS, **options)
    spans = memory.get_finished_spans()
    provider.shutdown()
    return sent, list(spans)


def settled(wh: Path, timeout: float = 10.0) -> None:
    """Wait until every acknowledged request is committed: the receiver answers 200 once a request
    is in the store's write-ahead spool, and deletes a spool segment once all its records are
    committed, so an empty spool folder means everything answered is queryable."""
    deadline = time.monotonic() + timeout
    while list((wh / "_spool" / "otlp").glob("*.wal")):
        assert time.monotonic() < deadline, "the OTLP spool was not committed in time"
        time.sleep(0.02)


def rows(wh: Path, query: str, *params) -> list[dict]:
    relation = tw.open(wh).sql(query, list(params) if params else None)
    return [dict(zip(relation.columns, row)) for row in relation.fetchall()]


def test_genai_agent_spans_over_otlp_http(server):
    sent, spans = genai_run("otel-genai", seed=11, model="gpt-5.4", response_model="gpt-5.4-2026-03-05")
    # two requests, the second gzip'd: a trace arrives across requests, children before their agent
    assert export(server.url, spans[:5]) and export(server.url, spans[5:], gzip_body=True)
    # durable on 200 (in the spool), queryable once committed, a moment later
    settled(server.wh)
    events = {e["span_id"]: e for e in rows(server.wh, "select * from events where run_id = $1", "otel-genai")}
    records = [r for t in sent["traces"] for r in t["spans"]]
    assert len(events) == len(records) == 12
    for record in records:
        event = events[record["span_id"]]
        assert event["parent_span_id"] == record["parent_span_id"]
        assert event["kind"] == {"agent": "delegation", "chat": "llm_call", "tool": "tool_call", "plain": "span"}[record["role"]]
    assert {e["trace_id"] for e in events.values()} == {t["trace_id"] for t in sent["traces"]}
    assert all(e["task_id"] == e["trace_id"] and e["benchmark"] == "otel" for e in events.values())

    calls = rows(server.wh, "select * from llm_calls where run_id = $1", "otel-genai")
    tokens = sent["tokens"]
    assert len(calls) == 4 and {c["model"] for c in calls} == {"gpt-5.4-2026-03-05"}
    assert sum(c["prompt_tokens"] for c in calls) == tokens["input_tokens"]
    assert sum(c["completion_tokens"] for c in calls) == tokens["output_tokens"]
    assert sum(c["cached_tokens"] for c in calls) == tokens["cache_read_input_tokens"]
    assert sum(c["reasoning_tokens"] for c in calls) == tokens["reasoning_output_tokens"]
    price = PriceRegistry()
    assert all(c["cost_usd"] == price.cost(c["model"], c["prompt_tokens"], c["completion_tokens"], c["cached_tokens"])
               and c["cost_usd"] > 0 and c["provider"] == "openai" for c in calls)
    assert sorted(c["finish_reason"] for c in calls) == ["stop", "stop", "tool_calls", "tool_calls"]
    # the agent spans' summed usage is not counted again
    run = rows(server.wh, "select * from runs where run_id = $1", "otel-genai")[0]
    assert run["prompt_tokens"] == tokens["input_tokens"] and run["n_delegations"] == 2

    tools = {(t["trace_id"], t["tool_name"]): t for t in rows(server.wh, "select * from tool_calls where run_id = $1", "otel-genai")}
    assert len(tools) == 4
    weather = tools[(sent["traces"][0]["trace_id"], "get_weather")]
    assert json.loads(weather["arguments"]) == {"city": "Paris"} and json.loads(weather["payload"])["result"] == {
        "temp_c": 14, "conditions": "cloudy"}
    failed = json.loads(tools[(sent["traces"][0]["trace_id"], "search_docs")]["payload"])
    assert failed["status"] == "error" and failed["error"] == "TimeoutError"
    # a failed tool call says why in a column of its own; one that worked has none
    assert {(name, t["error"]) for (_, name), t in tools.items()} == {("get_weather", None), ("search_docs", "TimeoutError")}
    # the model and tool spans name no agent: theirs is the enclosing invoke_agent span's
    # (the second chat's parent is the plain agent_turn span, itself under the agent)
    assert {c["agent"] for c in calls} | {t["agent"] for t in tools.values()} == {"weather-agent"}
    # seq: the span's start in microseconds since 1970, whichever request brought the span: the
    # run's time order, exact in a JSON number (nanoseconds since 1970 are past 2**53)
    assert {sid: e["seq"] for sid, e in events.items()} == {
        ots.hex_span_id(sp.context.span_id): sp.start_time // 1000 for sp in spans}
    assert all(e["seq"] < 2**53 for e in events.values())
    assert failed["events"][0]["name"] == "exception" and "timed out" in failed["status_message"]

    delegations = rows(server.wh, "select * from delegations where run_id = $1", "otel-genai")
    assert {d["to_agent"] for d in delegations} == {"weather-agent"} and len(delegations) == 2
    nested = [e for e in events.values() if e["parent_span_id"] in {d["span_id"] for d in delegations}]
    assert len(nested) == 8  # per agent: its first chat, its two tools and the plain span (the second chat's parent)
    plain = json.loads(next(e for e in events.values() if e["kind"] == "span")["payload"])
    assert plain["name"] == "agent_turn" and plain["attributes"] == {"app.turn": 2, "app.step": "compose_answer"}
    assert plain["resource"]["service.name"] == "tracewh-test-agent"


def test_openinference_instrumented_openai_client(server):
    provider, memory = ots.make_provider(run_id="otel-openinference", seed=12)
    sent = ots.openinference_openai_spans(provider)
    spans = memory.get_finished_spans()
    provider.shutdown()
    assert export(server.url, spans)
    settled(server.wh)
    events = {e["span_id"]: e for e in rows(server.wh, "select * from events where run_id = $1", "otel-openinference")}
    kinds = {"LLM": "llm_call", "TOOL": "tool_call", "AGENT": "delegation", "CHAIN": "span"}
    for record in sent["spans"]:
        event = events[record["span_id"]]
        assert (event["kind"], event["parent_span_id"]) == (kinds[record["openinference_span_kind"]], record["parent_span_id"])
    calls = rows(server.wh, "select * from llm_calls where run_id = $1 order by seq", "otel-openinference")
    for call, expected in zip(calls, sent["llm_calls"], strict=True):
        assert (call["model"], call["prompt_tokens"], call["completion_tokens"], call["cached_tokens"],
                call["reasoning_tokens"], call["finish_reason"]) == (
            expected["response_model"], expected["prompt_tokens"], expected["completion_tokens"],
            expected["cached_tokens"], expected["reasoning_tokens"], expected["finish_reason"])
    (tool,) = rows(server.wh, "select * from tool_calls where run_id = $1", "otel-openinference")
    assert tool["tool_name"] == "get_weather" and json.loads(tool["arguments"]) == {"city": "Paris"}
    assert json.loads(tool["payload"])["call_id"] == sent["tool_call_id"]
    (delegation,) = rows(server.wh, "select * from delegations where run_id = $1", "otel-openinference")
    assert delegation["to_agent"] == "weather-agent"


def test_otlp_json_bodies_get_json_answers_and_dual_conventions_agree(server):
    provider, memory = ots.make_provider(run_id="otel-json", seed=13)
    ots.openinference_openai_spans(provider, genai_semconv=True)  # GenAI attributes written beside OpenInference's
    spans = memory.get_finished_spans()
    provider.shutdown()
    body = gzip.compress(json.dumps(ots.otlp_json_dict(ots.otlp_request(spans))).encode())
    answer = httpx.post(server.url, content=body, timeout=30,
                        headers={**AUTH, "Content-Type": "application/json", "Content-Encoding": "gzip"})
    assert answer.status_code == 200 and answer.headers["content-type"] == "application/json" and answer.json() == {}
    settled(server.wh)
    kinds = rows(server.wh, "select kind, count(*) as n, sum(prompt_tokens) as tokens from events where run_id = $1 "
                            "group by 1 order by 1", "otel-json")
    assert [(k["kind"], k["n"], k["tokens"]) for k in kinds] == [
        ("delegation", 1, None), ("llm_call", 2, 57 + 95), ("span", 1, None), ("tool_call", 1, None)]


def test_no_token_wrong_token_or_no_configured_token_stores_nothing(server, tmp_path, new_service):
    _, spans = genai_run("otel-unauthorised", seed=14)
    before = store_version(server.wh)
    assert not export(server.url, spans, token=None)
    assert not export(server.url, spans, token="wrong")
    refused = httpx.post(server.url, content=b"", headers={"Content-Type": "application/json"}, timeout=30)
    assert refused.status_code == 401 and "bearer token" in refused.json()["message"]
    assert store_version(server.wh) == before
    assert not rows(server.wh, "select 1 from events where run_id = $1", "otel-unauthorised")
    off = new_service(tmp_path / "wh")  # started without a token
    answer = off.post("/v1/traces", content=ots.otlp_request(spans).SerializeToString(),
                      headers={**AUTH, "Content-Type": "application/x-protobuf"})
    assert answer.status_code == 403 and b"TRACEWH_SERVICE_TOKEN" in answer.content
    assert store_version(tmp_path / "wh") is None


@pytest.mark.parametrize("content_type, body, status", [
    ("application/x-protobuf", b"not protobuf at all", 400),
    ("application/json", b"{not json", 400),
    ("application/json", json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [
        {"traceId": "zz" * 16, "spanId": "01" * 8, "name": "x"}]}]}]}).encode(), 400),
    ("application/x-protobuf", gzip.compress(b"x" * 100, mtime=0)[:20], 400),  # a truncated gzip body (Content-Encoding below);
    # mtime=0 keeps the bytes, and so the test id, the same in every xdist worker
    ("text/plain", b"hello", 415),
])
def test_malformed_bodies_are_refused_and_store_nothing(server, content_type, body, status):
    before = store_version(server.wh)
    headers = {**AUTH, "Content-Type": content_type}
    if body[:2] == b"\x1f\x8b":
        headers["Content-Encoding"] = "gzip"
    answer = httpx.post(server.url, content=body, headers=headers, timeout=30)
    assert answer.status_code == status, answer.content
    if content_type == "application/json":
        assert answer.json()["message"]
    assert store_version(server.wh) == before


def test_sending_the_same_spans_again_adds_nothing(server):
    _, spans = genai_run("otel-resent", seed=15)
    assert export(server.url, spans)
    settled(server.wh)
    version, count = store_version(server.wh), len(rows(server.wh, "select 1 from events where run_id = $1", "otel-resent"))
    assert export(server.url, spans) and export(server.url, spans[::-1][:4])
    settled(server.wh)
    assert store_version(server.wh) == version and count == 12


def test_concurrent_small_requests_share_commits(server):
    _, spans = genai_run("otel-concurrent", seed=16)
    spans += genai_run("otel-concurrent", seed=17)[1]
    before = store_version(server.wh)
    results: list[bool] = []
    threads = [threading.Thread(target=lambda s=s: results.append(export(server.url, [s]))) for s in spans]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == [True] * 24
    settled(server.wh)
    assert len(rows(server.wh, "select 1 from events where run_id = $1", "otel-concurrent")) == 24
    assert store_version(server.wh) - before < 24  # grouped: fewer commits than requests


def test_collector_files_json_lines_and_proto(tmp_path):
    sent, spans = genai_run("otel-files", seed=18, legacy_attributes=True)  # gen_ai.system, usage.prompt_tokens
    requests = ots.otlp_requests(spans, batch_size=4)  # several lines and frames; children before parents
    lines = ots.write_otlp_json_lines(tmp_path / "traces.json", requests)  # JSON lines, named .json
    frames = ots.write_otlp_proto_file(tmp_path / "traces.binpb", requests)
    tracewh("ingest", lines, "-w", tmp_path / "a", check=True)
    tracewh("ingest", frames, "-w", tmp_path / "b", check=True)
    again = tracewh("ingest", frames, "-w", tmp_path / "a", check=True)
    assert "0 events added, 12 duplicate events" in " ".join(again.out.split())
    columns = "event_id, kind, trace_id, span_id, parent_span_id, ts, latency_s, model, prompt_tokens, completion_tokens, tool_name"
    a = rows(tmp_path / "a", f"select {columns} from events order by event_id")
    assert a == rows(tmp_path / "b", f"select {columns} from events order by event_id") and len(a) == 12
    calls = rows(tmp_path / "a", "select * from llm_calls")
    assert sum(c["prompt_tokens"] for c in calls) == sent["tokens"]["input_tokens"]
    assert {c["provider"] for c in calls} == {"openai"}
    assert tw.open(tmp_path / "b").log()[0].adapters == "otlp-proto"  # detected by content


def test_spans_of_no_typed_kind_unknown_attributes_and_missing_parents_are_kept(tmp_path):
    from opentelemetry.trace import Status, StatusCode

    provider, memory = ots.make_provider(benchmark="agents-x", seed=19)
    tracer = provider.get_tracer("test")
    with tracer.start_as_current_span("pipeline", attributes={"openinference.span.kind": "CHAIN", "my.flag": True}):
        with tracer.start_as_current_span("embeddings text-embedding-3",
                                          attributes={"gen_ai.operation.name": "embeddings", "gen_ai.usage.input_tokens": 9}):
            pass
        with tracer.start_as_current_span("chat gpt-5.4", attributes={"gen_ai.operation.name": "chat",
                                                                     "gen_ai.request.model": "gpt-5.4",
                                                                     "custom.nested": {"a": [1, 2.5, "x"]}}) as span:
            span.set_status(Status(StatusCode.ERROR, "rate limited"))
    spans = memory.get_finished_spans()
    provider.shutdown()
    orphan = spans[:2]  # the pipeline span (their parent) never sent
    ots.write_otlp_json_lines(tmp_path / "partial.jsonl", [ots.otlp_request(orphan)])
    tracewh("ingest", tmp_path / "partial.jsonl", "-w", tmp_path / "wh", check=True)
    events = {json.loads(e["payload"])["name"]: e for e in rows(tmp_path / "wh", "select * from events")}
    root = format(spans[2].context.span_id, "016x")
    assert {name: e["parent_span_id"] for name, e in events.items()} == {"embeddings text-embedding-3": root, "chat gpt-5.4": root}
    embedding, chat = events["embeddings text-embedding-3"], events["chat gpt-5.4"]
    assert embedding["kind"] == "span" and embedding["benchmark"] == "agents-x" and embedding["prompt_tokens"] is None
    assert json.loads(embedding["payload"])["attributes"]["gen_ai.usage.input_tokens"] == 9
    assert chat["kind"] == "llm_call" and chat["finish_reason"] == "error"
    payload = json.loads(chat["payload"])
    assert payload["error"] == "rate limited" and payload["attributes"]["custom.nested"] == {"a": [1, 2.5, "x"]}
    ots.write_otlp_json_lines(tmp_path / "rest.jsonl", [ots.otlp_request(spans[2:])])  # the parent comes later
    tracewh("ingest", tmp_path / "rest.jsonl", "-w", tmp_path / "wh", check=True)
    (chain,) = rows(tmp_path / "wh", "select * from events where span_id = $1", root)
    assert chain["kind"] == "span" and json.loads(chain["payload"])["attributes"]["my.flag"] is True


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> Path:
    from tracewh.demo.build import build_demo

    wh, _ = build_demo(tmp_path_factory.mktemp("demo"), tasks=3)
    return wh.path


VIEW_COLUMNS = "* exclude (payload)"


def test_a_demo_store_round_trips_through_otlp(demo, tmp_path):
    out = tmp_path / "demo.otlp.jsonl"
    tracewh("export-otlp", out, "-w", demo, check=True)
    requests = [json.loads(line) for line in out.read_text().splitlines()]
    spans = [s for r in requests for rs in r["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]]
    by_trace: dict[str, set] = {}
    for span in spans:
        assert len(span["traceId"]) == 32 and len(span["spanId"]) == 16
        assert span["spanId"] not in by_trace.setdefault(span["traceId"], set()), "a span id twice in one trace"
        by_trace[span["traceId"]].add(span["spanId"])
    assert all(s["parentSpanId"] in by_trace[s["traceId"]] for s in spans if "parentSpanId" in s)  # every tree whole
    operations = {a["value"]["stringValue"] for s in spans for a in s["attributes"] if a["key"] == "gen_ai.operation.name"}
    assert operations == {"chat", "execute_tool", "invoke_agent"}

    tracewh("ingest", out, "-w", tmp_path / "copy", check=True)
    for view in ("llm_calls", "tool_calls", "delegations"):
        query = f"select {VIEW_COLUMNS}, payload from {view} order by event_id"
        assert rows(tmp_path / "copy", query) == rows(demo, query), view
    events = "select event_id, kind, run_id, task_id, trace_id, span_id, parent_span_id, payload from events order by event_id"
    assert rows(tmp_path / "copy", events) == rows(demo, events)


def test_export_otlp_posts_runs_to_an_otlp_endpoint(demo, server):
    result = tracewh("export-otlp", "--benchmark", "entcollabbench", "--endpoint", server.url,
                     "--header", f"Authorization=Bearer {TOKEN}", "-w", demo, check=True)
    assert "requests to " + server.url in result.err
    settled(server.wh)
    for view in ("llm_calls", "tool_calls", "delegations"):
        query = f"select {VIEW_COLUMNS} from {view} where benchmark = 'entcollabbench' order by event_id"
        assert rows(server.wh, query) == rows(demo, query), view
    refused = tracewh("export-otlp", "--benchmark", "entcollabbench", "--endpoint", server.url, "-w", demo)
    assert refused.code == 2 and "HTTP 401" in refused.err


def test_optimize_compacts_without_changing_answers_or_old_versions(tmp_path, wh):
    for i in range(6):
        tracewh("ingest", write_native(tmp_path / f"b{i}.jsonl", [llm_call(f"r{i}", j, prompt_tokens=j) for j in range(5)]),
                "-w", wh, check=True)
    store = tw.open(wh)
    versions = {v: tw.open(wh, v).sql("select count(*), sum(prompt_tokens) from events").fetchall() for v in range(1, 7)}
    answers = {v: rows(wh, f"select * from {v} order by all") for v in ("llm_calls", "runs", "tasks")}
    files_before = len(store.store.files())
    result = tracewh("optimize", "-w", wh, check=True)
    assert f"data files: {files_before} -> 1" in result.err
    assert {v: rows(wh, f"select * from {v} order by all") for v in answers} == answers
    tracewh("ingest", write_native(tmp_path / "more.jsonl", [llm_call("more", j) for j in range(3)]), "-w", wh, check=True)
    removed = tw.open(wh).doctor()
    assert removed["uncommitted data files"] == []  # compacted-away files are referenced by old versions: kept
    for version, answer in versions.items():
        assert tw.open(wh, version).sql("select count(*), sum(prompt_tokens) from events").fetchall() == answer
        assert tw.open(wh).store.unreadable_files(version) == []
    assert tw.open(wh).sql("select count(*) from events").fetchall() == [(33,)]
    assert store_version(wh) == 8 and [b.version for b in tw.open(wh).log()] == [1, 2, 3, 4, 5, 6, 8]


# -- one size limit, end to end (#33) ------------------------------------------------------------

def one_span_request(run_id: str, span_id: int, *, padding: int = 0):
    """A request of one chat span for run `run_id`, carrying `padding` bytes in an attribute."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
    from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

    request = ExportTraceServiceRequest()
    resource = request.resource_spans.add()
    resource.resource.attributes.append(KeyValue(key="tracewh.run_id", value=AnyValue(string_value=run_id)))
    span = resource.scope_spans.add().spans.add()
    span.trace_id, span.span_id, span.name = span_id.to_bytes(16, "big"), span_id.to_bytes(8, "big"), "chat big"
    span.start_time_unix_nano, span.end_time_unix_nano = ots.T0_NS, ots.T0_NS + 10**9
    span.attributes.append(KeyValue(key="gen_ai.operation.name", value=AnyValue(string_value="chat")))
    span.attributes.append(KeyValue(key="app.padding", value=AnyValue(string_value="x" * padding)))
    return request


def test_one_size_limit_end_to_end_413_above_it_stored_below(server):
    from google.rpc.status_pb2 import Status

    from tracewh.ingest.sources import Limits
    from tracewh.service.otlp import MAX_BODY_BYTES

    # the receiver's cap is the pipeline's record limit: a request it takes, the pipeline takes
    assert MAX_BODY_BYTES == Limits().max_line_bytes == 32 << 20
    headers = {**AUTH, "Content-Type": "application/x-protobuf"}
    # just under the limit (what used to be a 422 "no adapter recognises this file" from 32 to 64 MiB)
    under = one_span_request("otel-big", 0xB16, padding=MAX_BODY_BYTES - 1000).SerializeToString()
    assert MAX_BODY_BYTES - 1000 < len(under) <= MAX_BODY_BYTES
    answer = httpx.post(server.url, content=under, headers=headers, timeout=120)
    assert answer.status_code == 200, answer.content[:300]
    settled(server.wh)
    assert rows(server.wh, "select count(*) as n from llm_calls where run_id = 'otel-big'") == [{"n": 1}]
    # just over it: 413, naming the limit, and nothing stored
    before = store_version(server.wh)
    over = one_span_request("otel-too-big", 0xB17, padding=MAX_BODY_BYTES).SerializeToString()
    answer = httpx.post(server.url, content=over, headers=headers, timeout=120)
    assert answer.status_code == 413 and str(MAX_BODY_BYTES) in Status.FromString(answer.content).message
    answer = httpx.post(server.url, content=gzip.compress(over), timeout=120,
                        headers={**headers, "Content-Encoding": "gzip"})  # small on the wire, over once inflated
    assert answer.status_code == 413
    assert store_version(server.wh) == before


def test_log_names_the_encoding_each_request_was_sent_in(server):
    request = one_span_request("otel-encodings", 0xE1)
    as_json = json.dumps(ots.otlp_json_dict(request), indent=2).encode()  # pretty-printed: lines inside
    answer = httpx.post(server.url, content=as_json, headers={**AUTH, "Content-Type": "application/json"}, timeout=30)
    assert answer.status_code == 200 and answer.json() == {}
    settled(server.wh)
    assert tw.open(server.wh).log()[-1].adapters == "otlp-json"
    proto = one_span_request("otel-encodings", 0xE2).SerializeToString()
    answer = httpx.post(server.url, content=proto, headers={**AUTH, "Content-Type": "application/x-protobuf"}, timeout=30)
    assert answer.status_code == 200
    settled(server.wh)
    assert tw.open(server.wh).log()[-1].adapters == "otlp-proto"
    assert rows(server.wh, "select count(*) as n from events where run_id = 'otel-encodings'") == [{"n": 2}]


# -- spans no sender should write are refused, naming the field (#33) ----------------------------

def _first_span(body: dict) -> dict:
    return body["resourceSpans"][0]["scopeSpans"][0]["spans"][0]


def _ends_before_start(body: dict) -> None:
    span = _first_span(body)
    span["endTimeUnixNano"] = str(int(span["startTimeUnixNano"]) - 1)


def _kind_99(body: dict) -> None:
    _first_span(body)["kind"] = 99


def _run_id_list(body: dict) -> None:
    body["resourceSpans"][0]["resource"]["attributes"] = [{"key": "tracewh.run_id", "value": {"arrayValue": {
        "values": [{"stringValue": "run-a"}, {"stringValue": "run-b"}]}}}]


def _int64_max_tokens(body: dict) -> None:
    _first_span(body)["attributes"].append({"key": "gen_ai.usage.input_tokens", "value": {"intValue": str(2**63 - 1)}})


@pytest.mark.parametrize("break_it, field", [
    (_ends_before_start, "endTimeUnixNano"),
    (_kind_99, "kind"),
    (_run_id_list, "tracewh.run_id"),
    (_int64_max_tokens, "gen_ai.usage.input_tokens"),
])
def test_impossible_spans_are_refused_naming_the_field(server, tmp_path, break_it, field):
    body = ots.otlp_json_dict(one_span_request("otel-impossible", 0xBAD))
    break_it(body)
    # a Collector file, through `tracewh ingest`: exit 2, one line naming file, line and field
    path = tmp_path / "traces.jsonl"
    path.write_text(json.dumps(body) + "\n")
    wh = tmp_path / "wh"
    result = tracewh("ingest", path, "-w", wh)
    assert result.code == 2, result.err
    message = [line for line in result.err.strip().splitlines() if line.strip()]
    assert len(message) == 1 and "traces.jsonl" in message[0] and "line 1" in message[0] and f"'{field}'" in message[0]
    assert store_version(wh) is None
    # the same request over OTLP/HTTP: 400 (not retried), naming the field, nothing stored
    before = store_version(server.wh)
    answer = httpx.post(server.url, content=json.dumps(body).encode(), timeout=30,
                        headers={**AUTH, "Content-Type": "application/json"})
    assert answer.status_code == 400 and f"'{field}'" in answer.json()["message"]
    assert store_version(server.wh) == before
