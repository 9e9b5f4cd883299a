"""A fake OpenAI/Anthropic HTTP server for trying recording with no network.

    fake = FakeLLM([openai_completion("gpt-5.4", tool_calls=[("web_search", {"q": "x"})]), status(429), ...])
    client = OpenAI(api_key="test", base_url=fake.openai_url, http_client=httpx2.Client(transport=fake.transport()))

Responses are served in order (then `default`), shaped like the providers' real ones:
chat completions and their SSE chunks, Anthropic messages and their SSE events.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from typing import Any

import httpx2

Reply = Callable[[httpx2.Request], httpx2.Response]
_ids = itertools.count(1)


def _json(body: dict[str, Any], headers: dict[str, str] | None = None) -> Reply:
    return lambda request: httpx2.Response(200, json=body, headers={"x-request-id": f"req_{next(_ids)}", **(headers or {})})


def _sse(events: list[tuple[str | None, dict[str, Any] | str]]) -> Reply:
    text = "".join((f"event: {name}\n" if name else "") + f"data: {data if isinstance(data, str) else json.dumps(data)}\n\n"
                   for name, data in events)
    return lambda request: httpx2.Response(200, content=text.encode(), headers={"content-type": "text/event-stream"})


def status(code: int, message: str = "error") -> Reply:
    """An error reply; 429 and 5xx are retried by the SDKs (after 1 ms here)."""
    body = {"error": {"message": message, "type": "rate_limit_error" if code == 429 else "server_error"}}
    return lambda request: httpx2.Response(code, json=body, headers={"retry-after-ms": "1", "x-should-retry": "true"})


def openai_completion(model: str, content: str | None = None, tool_calls: list[tuple[str, dict]] = (),
                      prompt_tokens: int = 1200, completion_tokens: int = 80, cached_tokens: int = 0,
                      reasoning_tokens: int = 0) -> Reply:
    calls = [{"id": f"call_{next(_ids)}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
             for name, args in tool_calls]
    message = {"role": "assistant", "content": content, **({"tool_calls": calls} if calls else {})}
    return _json({"id": f"chatcmpl-{next(_ids)}", "object": "chat.completion", "created": 1776000000, "model": model,
                  "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}],
                  "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                            "total_tokens": prompt_tokens + completion_tokens,
                            "prompt_tokens_details": {"cached_tokens": cached_tokens},
                            "completion_tokens_details": {"reasoning_tokens": reasoning_tokens}}})


def openai_stream(model: str, pieces: list[str], prompt_tokens: int = 900, completion_tokens: int = 12) -> Reply:
    chunk_id = f"chatcmpl-{next(_ids)}"

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {"id": chunk_id, "object": "chat.completion.chunk", "created": 1776000000, "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    events = [(None, chunk({"role": "assistant", "content": ""}))] + [(None, chunk({"content": p})) for p in pieces]
    events += [(None, chunk({}, "stop")),
               (None, {"id": chunk_id, "object": "chat.completion.chunk", "created": 1776000000, "model": model,
                       "choices": [], "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                                                "total_tokens": prompt_tokens + completion_tokens}}),
               (None, "[DONE]")]
    return _sse(events)


def _anthropic_usage(input_tokens: int, output_tokens: int, cache_read: int, cache_write: int) -> dict[str, int]:
    return {"input_tokens": input_tokens, "output_tokens": output_tokens,
            "cache_read_input_tokens": cache_read, "cache_creation_input_tokens": cache_write}


def anthropic_message(model: str, text: str | None = None, tool_uses: list[tuple[str, dict]] = (),
                      input_tokens: int = 500, output_tokens: int = 60, cache_read: int = 0, cache_write: int = 0) -> Reply:
    content = ([{"type": "text", "text": text}] if text else []) + [
        {"type": "tool_use", "id": f"toolu_{next(_ids)}", "name": name, "input": args} for name, args in tool_uses]
    return _json({"id": f"msg_{next(_ids)}", "type": "message", "role": "assistant", "model": model, "content": content,
                  "stop_reason": "tool_use" if tool_uses else "end_turn", "stop_sequence": None,
                  "usage": _anthropic_usage(input_tokens, output_tokens, cache_read, cache_write)},
                 headers={"request-id": f"req_{next(_ids)}"})


def anthropic_stream(model: str, pieces: list[str], input_tokens: int = 400, output_tokens: int = 9) -> Reply:
    start = {"type": "message_start", "message": {
        "id": f"msg_{next(_ids)}", "type": "message", "role": "assistant", "model": model, "content": [],
        "stop_reason": None, "stop_sequence": None, "usage": _anthropic_usage(input_tokens, 1, 0, 0)}}
    events = [("message_start", start),
              ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})]
    events += [("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": p}})
               for p in pieces]
    events += [("content_block_stop", {"type": "content_block_stop", "index": 0}),
               ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                                  "usage": {"output_tokens": output_tokens}}),
               ("message_stop", {"type": "message_stop"})]
    return _sse(events)


class FakeLLM:
    """Serves scripted replies in order; records the requests it saw."""

    openai_url = "http://fake-llm.test/v1"
    anthropic_url = "http://fake-llm.test"

    def __init__(self, script: list[Reply] = (), default: Reply | None = None):
        self.script = list(script)
        self.default = default
        self.requests: list[httpx2.Request] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(request)
        if self.script:
            return self.script.pop(0)(request)
        if self.default is not None:
            return self.default(request)
        return httpx2.Response(500, json={"error": {"message": "fake script exhausted", "type": "server_error"}})

    def transport(self) -> httpx2.MockTransport:
        return httpx2.MockTransport(self)
