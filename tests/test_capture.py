"""Live capture: the real openai and anthropic clients over a fake HTTP transport, recorded into a spool."""

from __future__ import annotations

import asyncio
import contextvars
import json
import os
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import anthropic
import httpx2
import openai
import pytest
from helpers import tracewh

import tracewh as tw
from fake_llm import FakeLLM, anthropic_message, anthropic_stream, openai_completion, openai_stream, status

USER = [{"role": "user", "content": "Where is the Louvre?"}]


def openai_client(fake: FakeLLM, cls=openai.OpenAI, max_retries: int = 2):
    http = (httpx2.AsyncClient if cls is openai.AsyncOpenAI else httpx2.Client)(transport=fake.transport())
    return cls(api_key="test", base_url=fake.openai_url, http_client=http, max_retries=max_retries)


def anthropic_client(fake: FakeLLM, cls=anthropic.Anthropic, max_retries: int = 2):
    http = (httpx2.AsyncClient if cls is anthropic.AsyncAnthropic else httpx2.Client)(transport=fake.transport())
    return cls(api_key="test", base_url=fake.anthropic_url, http_client=http, max_retries=max_retries)


def captured(tmp_path: Path, spool: Path) -> tw.Warehouse:
    tracewh("ingest", spool, "-w", tmp_path / "wh", check=True)
    return tw.open(tmp_path / "wh")


def calls(wh: tw.Warehouse, columns: str = "*") -> list[dict]:
    return wh.sql(f"select {columns} from llm_calls order by seq").pl().to_dicts()


def test_openai_call_with_tool_calls_reasoning_and_cached_tokens(tmp_path):
    fake = FakeLLM([openai_completion("gpt-5.4-2026-03-05", tool_calls=[("web_search", {"query": "Louvre"})],
                                      prompt_tokens=1200, completion_tokens=80, cached_tokens=1024, reasoning_tokens=32)])
    with tw.record("r", attrs={"condition": "blind"}, spool=tmp_path / "spool") as rec:
        client = rec.wrap(openai_client(fake))
        with rec.task("t1"):
            result = client.chat.completions.create(model="gpt-5.4", messages=USER, temperature=0.2,
                                                    tools=[{"type": "function", "function": {"name": "web_search"}}])
    assert type(result) is openai.types.chat.ChatCompletion  # the SDK's own type, untouched
    (call,) = calls(captured(tmp_path, tmp_path / "spool"))
    payload = json.loads(call["payload"])
    assert (call["model"], call["prompt_tokens"], call["completion_tokens"], call["cached_tokens"],
            call["reasoning_tokens"], call["finish_reason"], call["task_id"], call["agent"]) == (
        "gpt-5.4-2026-03-05", 1200, 80, 1024, 32, "tool_calls", "t1", "orchestrator")
    assert call["cost_usd"] == pytest.approx((176 * 2.5 + 1024 * 0.25 + 80 * 15) / 1e6)  # snapshot priced as gpt-5.4
    assert payload["provider"] == "openai" and payload["requested_model"] == "gpt-5.4"
    assert payload["params"] == {"model": "gpt-5.4", "temperature": 0.2} and payload["tools_offered"] == ["web_search"]
    assert payload["tool_calls"] == [{"id": payload["tool_calls"][0]["id"], "name": "web_search"}]  # no arguments
    assert payload["request_id"].startswith("req_") and payload["response_id"].startswith("chatcmpl-")
    assert "messages" not in payload and "content" not in payload  # content is opt-in


def test_content_is_captured_only_when_asked(tmp_path):
    fake = FakeLLM([openai_completion("gpt-5.4", content="In Paris.")])
    with tw.record("r", spool=tmp_path / "spool", capture_content=True) as rec:
        rec.wrap(openai_client(fake)).chat.completions.create(model="gpt-5.4", messages=USER)
    payload = json.loads(calls(captured(tmp_path, tmp_path / "spool"))[0]["payload"])
    assert payload["messages"] == USER and payload["content"] == "In Paris."


def test_streams_keep_their_type_and_record_usage_and_time_to_first_token(tmp_path):
    fake = FakeLLM([openai_stream("gpt-5.4", ["Par", "is"], prompt_tokens=900, completion_tokens=12),
                    anthropic_stream("claude-sonnet-4-6", ["Pa", "ris"], input_tokens=400, output_tokens=9)])
    with tw.record("r", spool=tmp_path / "spool", capture_content=True) as rec:
        stream = rec.wrap(openai_client(fake)).chat.completions.create(
            model="gpt-5.4", messages=USER, stream=True, stream_options={"include_usage": True})
        assert type(stream) is openai.Stream
        assert "".join(c.choices[0].delta.content or "" for c in stream if c.choices) == "Paris"
        events = rec.wrap(anthropic_client(fake)).messages.create(model="claude-sonnet-4-6", max_tokens=50,
                                                                   messages=USER, stream=True)
        assert type(events) is anthropic.Stream
        assert [e.type for e in events][-1] == "message_stop"
    got = calls(captured(tmp_path, tmp_path / "spool"))
    assert [(c["model"], c["prompt_tokens"], c["completion_tokens"], c["finish_reason"]) for c in got] == [
        ("gpt-5.4", 900, 12, "stop"), ("claude-sonnet-4-6", 400, 9, "end_turn")]
    for c in got:
        payload = json.loads(c["payload"])
        assert payload["stream"] is True and 0 <= payload["ttft_s"] <= c["latency_s"] and payload["content"] == "Paris"


def test_anthropic_tool_use_and_cache_tokens(tmp_path):
    fake = FakeLLM([anthropic_message("claude-sonnet-4-6", "Checking.", [("web_search", {"query": "Louvre"})],
                                      input_tokens=500, output_tokens=60, cache_read=2000, cache_write=100)])
    with tw.record("r", spool=tmp_path / "spool", capture_content=True) as rec:
        message = rec.wrap(anthropic_client(fake)).messages.create(model="claude-sonnet-4-6", max_tokens=100, messages=USER)
        assert type(message) is anthropic.types.Message and message.content[1].type == "tool_use"
        with rec.tool("web_search", {"query": "Louvre"}) as t:
            t.result = "Paris"
    wh = captured(tmp_path, tmp_path / "spool")
    (call,) = calls(wh)
    payload = json.loads(call["payload"])
    assert (call["prompt_tokens"], call["cached_tokens"], call["completion_tokens"], call["finish_reason"]) == (
        2600, 2000, 60, "tool_use")  # prompt = input + cache reads + cache writes
    assert payload["usage"]["cache_creation_input_tokens"] == 100
    assert payload["tool_calls"] == [{"id": payload["tool_calls"][0]["id"], "name": "web_search",
                                      "arguments": {"query": "Louvre"}}]
    assert wh.sql("select tool_name, arguments ->> '$.query' from tool_calls").fetchall() == [("web_search", "Louvre")]
    assert wh.sql("select payload ->> '$.status' from events where kind = 'tool_result'").fetchall() == [("ok",)]


def test_a_429_then_success_records_the_retry(tmp_path):
    fake = FakeLLM([status(429), openai_completion("gpt-5.4")])
    with tw.record("r", spool=tmp_path / "spool") as rec:
        rec.wrap(openai_client(fake, max_retries=2)).chat.completions.create(model="gpt-5.4", messages=USER)
    payload = json.loads(calls(captured(tmp_path, tmp_path / "spool"))[0]["payload"])
    assert payload["retries"] == 1 and [a["status"] for a in payload["attempts"]] == [429, 200]


def test_a_500_raises_the_sdk_error_and_is_recorded(tmp_path):
    fake = FakeLLM([status(500)])
    with tw.record("r", spool=tmp_path / "spool") as rec:
        client = rec.wrap(anthropic_client(fake, max_retries=0))
        with pytest.raises(anthropic.InternalServerError):
            client.messages.create(model="claude-sonnet-4-6", max_tokens=10, messages=USER)
    (call,) = calls(captured(tmp_path, tmp_path / "spool"))
    error = json.loads(call["payload"])["error"]
    assert call["finish_reason"] == "error" and error["status"] == 500 and error["type"] == "InternalServerError"


def test_async_clients_and_asyncio_tasks_nest_correctly(tmp_path):
    fake = FakeLLM(default=openai_completion("gpt-5.4"))
    afake = FakeLLM(default=anthropic_message("claude-sonnet-4-6", "ok"))

    async def main(rec):
        oa = rec.wrap(openai_client(fake, openai.AsyncOpenAI))
        an = rec.wrap(anthropic_client(afake, anthropic.AsyncAnthropic))

        async def solve(task_id: str):
            with rec.task(task_id):
                await oa.chat.completions.create(model="gpt-5.4", messages=USER)
                with rec.delegate(to="claude-sonnet-4-6", subtask="verify"):
                    await an.messages.create(model="claude-sonnet-4-6", max_tokens=10, messages=USER)
                await oa.chat.completions.create(model="gpt-5.4", messages=USER)

        await asyncio.gather(*(solve(f"t{i}") for i in range(4)))

    with tw.record("r", spool=tmp_path / "spool") as rec:
        asyncio.run(main(rec))
    wh = captured(tmp_path, tmp_path / "spool")
    per_task = wh.sql("""select task_id, list(agent order by seq), list(payload ->> '$.step' order by seq)
                         from llm_calls group by 1 order by 1""").fetchall()
    assert per_task == [(f"t{i}", ["orchestrator", "peer", "orchestrator"], ["1", None, "2"]) for i in range(4)]
    linked = wh.sql("""select count(*) from llm_calls c join delegations d
                       on c.parent_span_id = d.span_id and c.task_id = d.task_id where c.agent = 'peer'""").fetchall()
    assert linked == [(4,)]


def test_threads_inherit_the_task_through_a_copied_context(tmp_path):
    fake = FakeLLM(default=openai_completion("gpt-5.4"))
    with tw.record("r", spool=tmp_path / "spool") as rec:
        client = rec.wrap(openai_client(fake))
        with rec.task("threaded"), ThreadPoolExecutor(4) as pool:
            ctx = contextvars.copy_context()
            jobs = [pool.submit(ctx.copy().run, client.chat.completions.create, model="gpt-5.4", messages=USER)
                    for _ in range(8)]
            [j.result() for j in jobs]
        client.chat.completions.create(model="gpt-5.4", messages=USER)  # outside any task: run level
    wh = captured(tmp_path, tmp_path / "spool")
    assert wh.sql("select task_id, count(*) from llm_calls group by 1 order by 1 nulls last").fetchall() == [
        ("threaded", 8), (None, 1)]


def full_disk(data):
    raise OSError(28, "No space left on device")


def test_a_recording_failure_is_a_warning_and_the_result_is_unchanged(tmp_path, monkeypatch):
    fake = FakeLLM([openai_completion("gpt-5.4", content="Paris"), status(500)])
    with tw.record("r", spool=tmp_path / "spool") as rec:
        client = rec.wrap(openai_client(fake, max_retries=0))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            monkeypatch.setattr(rec.spool, "write", full_disk)
            result = client.chat.completions.create(model="gpt-5.4", messages=USER)
            monkeypatch.setattr(tw.ingest.capture.llm_call.LLMCall, "_payload", lambda self, **k: 1 / 0)
            with pytest.raises(openai.InternalServerError):  # the SDK's own error, untouched
                client.chat.completions.create(model="gpt-5.4", messages=USER)
        monkeypatch.undo()
    assert result.choices[0].message.content == "Paris"
    messages = [str(w.message) for w in caught]
    assert any("could not record llm call: OSError" in m and "No space left" in m for m in messages)
    assert any("could not record llm call: ZeroDivisionError" in m for m in messages)


def test_spool_ingest_is_idempotent_and_skips_a_torn_last_line(tmp_path):
    fake = FakeLLM(default=openai_completion("gpt-5.4"))
    with tw.record("r", spool=tmp_path / "spool") as rec:
        client = rec.wrap(openai_client(fake))
        for _ in range(3):
            client.chat.completions.create(model="gpt-5.4", messages=USER)
    (part,) = list((tmp_path / "spool").rglob("part-*.jsonl"))
    with open(part, "ab") as f:
        f.write(b'{"event_id": "torn", "run_id": "r", "benchm')  # a crash mid-write
    wh = tmp_path / "wh"
    first = tracewh("ingest", tmp_path / "spool", "-w", wh, check=True)
    assert "interrupted write, skipped" in first.err
    assert tw.open(wh).sql("select count(*) from llm_calls").fetchall() == [(3,)]
    again = tracewh("ingest", tmp_path / "spool", "-w", wh, check=True)
    assert "already ingested" in again.out


def test_record_can_write_straight_into_a_store(tmp_path):
    fake = FakeLLM(default=openai_completion("gpt-5.4"))
    with tw.record("direct", spool=tmp_path / "spool", warehouse=tmp_path / "wh") as rec:
        rec.wrap(openai_client(fake)).chat.completions.create(model="gpt-5.4", messages=USER)
    assert tw.open(tmp_path / "wh").sql("select run_id, model, n_llm_calls from runs").fetchall() == [
        ("direct", "gpt-5.4", 1)]


def test_only_sdk_clients_can_be_wrapped(tmp_path):
    with tw.record("r", spool=tmp_path / "spool") as rec, pytest.raises(TypeError, match="OpenAI and Anthropic"):
        rec.wrap(object())


def test_async_streams_keep_their_type(tmp_path):
    fake = FakeLLM([openai_stream("gpt-5.4", ["a", "b"]), anthropic_stream("claude-sonnet-4-6", ["c"])])

    async def main(rec):
        stream = await rec.wrap(openai_client(fake, openai.AsyncOpenAI)).chat.completions.create(
            model="gpt-5.4", messages=USER, stream=True, stream_options={"include_usage": True})
        assert type(stream) is openai.AsyncStream
        text = [c.choices[0].delta.content async for c in stream if c.choices]
        events = await rec.wrap(anthropic_client(fake, anthropic.AsyncAnthropic)).messages.create(
            model="claude-sonnet-4-6", max_tokens=5, messages=USER, stream=True)
        assert type(events) is anthropic.AsyncStream
        return "".join(t or "" for t in text), [e.type async for e in events]

    with tw.record("r", spool=tmp_path / "spool") as rec:
        text, kinds = asyncio.run(main(rec))
    assert text == "ab" and kinds[-1] == "message_stop"
    got = calls(captured(tmp_path, tmp_path / "spool"), "model, completion_tokens, finish_reason")
    assert got == [{"model": "gpt-5.4", "completion_tokens": 12, "finish_reason": "stop"},
                   {"model": "claude-sonnet-4-6", "completion_tokens": 9, "finish_reason": "end_turn"}]


def test_the_delegating_orchestrator_example_end_to_end(tmp_path):
    import subprocess
    import sys

    example = Path(__file__).resolve().parents[1] / "examples" / "delegating_orchestrator.py"
    proc = subprocess.run([sys.executable, str(example), str(tmp_path / "wh")], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "claude-sonnet-4-6" in proc.stdout and "Anthropic" in proc.stdout
    wh = tw.open(tmp_path / "wh")
    assert wh.sql("select task_id, step, model, peer, peer_vendor, dominant_skill from dcb_delegations").fetchall() == [
        ("gaia/louvre", 3, "gpt-5.4", "claude-sonnet-4-6", "Anthropic", "information_retrieval")]
    assert wh.sql("select quality, n_steps, n_delegations from dcb_tasks").fetchall() == [(1.0, 4, 1)]


def test_without_capture_content_no_text_reaches_the_spool(tmp_path):
    """Only shapes, counts, names and ids: no messages, arguments, results or free-text parameters."""
    secrets = ("alice@example.com", "Louvre", "Paris is the answer", "verify the opening year", "secret-arg")
    fake = FakeLLM([openai_completion("gpt-5.4", content="Paris is the answer", tool_calls=[("web_search", {"q": "Louvre"})]),
                    anthropic_message("claude-sonnet-4-6", "Paris is the answer", [("lookup", {"q": "Louvre"})])])
    with tw.record("r", spool=tmp_path / "spool") as rec:
        with rec.task("t1"):
            rec.wrap(openai_client(fake)).chat.completions.create(
                model="gpt-5.4", messages=[{"role": "user", "content": "Louvre"}], user="alice@example.com", seed=7)
            with rec.delegate(to="claude-sonnet-4-6", subtask="verify the opening year"):
                rec.wrap(anthropic_client(fake)).messages.create(model="claude-sonnet-4-6", max_tokens=10, messages=USER,
                                                                 system="Louvre expert")
            with pytest.raises(KeyError), rec.tool("web_search", {"q": "secret-arg"}) as tool:
                tool.result = "Paris is the answer"
                raise KeyError("secret-arg")
    spooled = b"".join(p.read_bytes() for p in (tmp_path / "spool").rglob("*.jsonl")).decode()
    assert [s for s in secrets if s in spooled] == []
    wh = captured(tmp_path, tmp_path / "spool")
    first = json.loads(calls(wh)[0]["payload"])
    assert first["params"] == {"model": "gpt-5.4", "seed": 7}  # numbers and names stay
    assert first["tool_calls"] == [{"id": first["tool_calls"][0]["id"], "name": "web_search"}]
    assert wh.sql("select tool_name, arguments from tool_calls").fetchall() == [("web_search", None)]
    assert wh.sql("select payload ->> '$.error' from events where kind = 'tool_result'").fetchall() == [("KeyError",)]


def test_without_capture_content_a_provider_error_keeps_its_class_and_status_not_its_message(tmp_path):
    """A provider's error message can echo the request ("'Where is the Louvre?' is too long"): off,
    only the error's class and HTTP status are recorded; on, its message and code too."""
    echoed = "prompt 'Where is the Louvre?' is too long"
    for capture, spool in ((False, tmp_path / "off"), (True, tmp_path / "on")):
        fake = FakeLLM([status(400, echoed)])
        with tw.record("r", spool=spool, capture_content=capture) as rec:
            with pytest.raises(openai.BadRequestError):
                rec.wrap(openai_client(fake, max_retries=0)).chat.completions.create(model="gpt-5.4", messages=USER)
    spooled = b"".join(p.read_bytes() for p in (tmp_path / "off").rglob("*.jsonl")).decode()
    assert "Louvre" not in spooled
    tracewh("ingest", tmp_path / "off", "-w", tmp_path / "wh-off", check=True)
    (call,) = calls(tw.open(tmp_path / "wh-off"))
    assert call["finish_reason"] == "error"
    assert json.loads(call["payload"])["error"] == {"type": "BadRequestError", "status": 400}
    tracewh("ingest", tmp_path / "on", "-w", tmp_path / "wh-on", check=True)
    (call,) = calls(tw.open(tmp_path / "wh-on"))
    assert echoed in json.loads(call["payload"])["error"]["message"]


def modes(folder: Path) -> set[str]:
    """The permission bits of the folder and of everything under it, as octal strings."""
    return {oct(p.stat().st_mode & 0o777) for p in [folder, *folder.rglob("*")]}


def test_a_store_created_from_a_private_spool_is_private_and_stays_so(tmp_path):
    """record(warehouse=...) creates the store with the spool folder's bits (0700): its files hold
    the same events, prompts included. Later writers (an ingest, a query's catalog) keep to it."""
    fake = FakeLLM(default=openai_completion("gpt-5.4"))
    with tw.record("r", spool=tmp_path / "spool", warehouse=tmp_path / "wh", capture_content=True) as rec:
        rec.wrap(openai_client(fake)).chat.completions.create(model="gpt-5.4", messages=USER)
    assert modes(tmp_path / "spool") == {"0o700", "0o600"}
    with tw.record("r2", spool=tmp_path / "spool2") as rec:
        rec.wrap(openai_client(fake)).chat.completions.create(model="gpt-5.4", messages=USER)
    tracewh("ingest", tmp_path / "spool2", "-w", tmp_path / "wh", check=True)
    assert tw.open(tmp_path / "wh").sql("select count(*) from runs").fetchall() == [(2,)]  # the catalog is written too
    assert list((tmp_path / "wh" / "_catalog").glob("*.duckdb"))
    assert modes(tmp_path / "wh") == {"0o700", "0o600"}


def test_an_existing_store_keeps_its_modes(tmp_path):
    (tmp_path / "wh").mkdir(mode=0o755)
    os.chmod(tmp_path / "wh", 0o755)
    fake = FakeLLM(default=openai_completion("gpt-5.4"))
    with tw.record("r", spool=tmp_path / "spool", warehouse=tmp_path / "wh") as rec:
        rec.wrap(openai_client(fake)).chat.completions.create(model="gpt-5.4", messages=USER)
    assert tw.open(tmp_path / "wh").sql("select count(*) from llm_calls").fetchall() == [(1,)]
    assert oct((tmp_path / "wh").stat().st_mode & 0o777) == "0o755"
    assert modes(tmp_path / "wh" / "events") <= {"0o755", "0o644", "0o750", "0o640", "0o700", "0o600"}  # the umask's
