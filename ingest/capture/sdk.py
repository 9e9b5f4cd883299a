"""Wrapping SDK clients: the same client object comes back with its create methods recording.

Per request: one `llm_call` event, written when the response (or the stream's last item,
or the exception) arrives. Attempts and retries are read from the SDK's own HTTP client
through event hooks (the SDKs number retries in the `x-stainless-retry-count` header).
Streams keep their SDK type: only their item iterator is observed.
"""

from __future__ import annotations

import functools
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextvars import ContextVar
from typing import Any

import orjson

from .recorder import Frame, Recorder, new_span, now

_CALL: ContextVar[LLMCall | None] = ContextVar("tracewh_llm_call", default=None)
SKIPPED_PARAMS = {"messages", "tools", "system", "extra_headers", "extra_query", "extra_body", "timeout", "metadata"}


class LLMCall:
    """One request in flight: when it started, where it belongs, what the HTTP layer saw."""

    def __init__(self, recorder: Recorder, provider: str, kwargs: dict[str, Any]):
        self.recorder, self.provider, self.kwargs = recorder, provider, kwargs
        self.frame: Frame = recorder.frame()
        self.step = None
        if self.frame.agent == "orchestrator" and self.frame.task_id is not None:
            self.frame.steps[0] += 1
            self.step = self.frame.steps[0]
        self.ts, self.started = now(), time.perf_counter()
        self.first_item: float | None = None
        self.attempts: list[dict[str, int]] = []

    def see_response(self, status: int, retry: int) -> None:
        self.attempts.append({"status": status, "retry": retry})

    def _payload(self, **extra: Any) -> dict[str, Any]:
        kwargs = self.kwargs
        payload = {"provider": self.provider, "requested_model": kwargs.get("model"), "step": self.step,
                   "params": {k: v for k, v in kwargs.items()
                              if k not in SKIPPED_PARAMS and isinstance(v, (str, int, float, bool))},
                   "tools_offered": [_tool_name(t) for t in kwargs.get("tools") or []],
                   "attempts": self.attempts, "retries": max((a["retry"] for a in self.attempts), default=0)}
        if self.recorder.capture_content:
            payload["messages"] = orjson.loads(orjson.dumps(kwargs.get("messages"), default=str))
            if "system" in kwargs:
                payload["system"] = orjson.loads(orjson.dumps(kwargs["system"], default=str))
        return payload | extra

    def done(self) -> None:
        """Note the end time now; the event itself is built later, off the caller's path."""
        self.latency = time.perf_counter() - self.started

    def finish(self, summary: dict[str, Any], seq: int) -> dict[str, Any]:
        latency = self.latency
        model = summary.get("model") or self.kwargs.get("model")
        self.recorder.note_model(model if self.frame.agent == "orchestrator" else None)
        content = summary.pop("content", None)
        extra = {k: summary.get(k) for k in ("tool_calls", "response_id", "request_id", "usage", "stop_sequence")}
        if self.first_item is not None:
            extra |= {"stream": True, "ttft_s": self.first_item - self.started}
        if self.recorder.capture_content:
            extra["content"] = content
        cost = self.recorder.prices.cost(model, summary.get("prompt_tokens"), summary.get("completion_tokens"),
                                         summary.get("cached_tokens"))
        return self.recorder.event("llm_call", self.frame, seq, ts=self.ts, span_id=new_span(), model=model,
                           prompt_tokens=summary.get("prompt_tokens"), completion_tokens=summary.get("completion_tokens"),
                           reasoning_tokens=summary.get("reasoning_tokens"), cached_tokens=summary.get("cached_tokens"),
                           finish_reason=summary.get("finish_reason"), latency_s=latency, cost_usd=cost,
                                   payload=self._payload(**extra))

    def fail(self, error: BaseException, seq: int) -> dict[str, Any]:
        status = getattr(error, "status_code", None)
        detail = {"type": type(error).__name__, "status": status, "code": getattr(error, "code", None),
                  "message": str(error)[:500]}
        return self.recorder.event("llm_call", self.frame, seq, ts=self.ts, span_id=new_span(),
                                   model=self.kwargs.get("model"), latency_s=self.latency, finish_reason="error",
                                   payload=self._payload(error=detail))


def _tool_name(tool: Any) -> str | None:
    if isinstance(tool, dict):
        return (tool.get("function") or {}).get("name") or tool.get("name")
    return getattr(tool, "name", None)


# -- HTTP hooks: attempts and retries ------------------------------------------------

def _note(response: Any) -> None:
    call = _CALL.get()
    if call is not None:
        retry = response.request.headers.get("x-stainless-retry-count", "0")
        call.see_response(response.status_code, int(retry) if retry.isdigit() else 0)


async def _note_async(response: Any) -> None:
    _note(response)


def install_http_hooks(http_client: Any, is_async: bool) -> None:
    hooks = dict(http_client.event_hooks)
    hook = _note_async if is_async else _note
    if hook not in hooks.get("response", []):
        hooks["response"] = [*hooks.get("response", []), hook]
        http_client.event_hooks = hooks


# -- streams ---------------------------------------------------------------------------

def _on_item(call: LLMCall, accumulator: Any, item: Any) -> None:
    if call.first_item is None:
        call.first_item = time.perf_counter()
    call.recorder.safely("stream item", accumulator.add, item)


def _on_end(call: LLMCall, accumulator: Any, error: BaseException | None = None) -> None:
    call.done()
    if error is None:
        call.recorder.defer(lambda seq: call.finish(accumulator.summary(), seq))
    else:
        call.recorder.defer(lambda seq: call.fail(error, seq))


def _observe_sync(items: Iterator[Any], call: LLMCall, accumulator: Any) -> Iterator[Any]:
    try:
        for item in items:
            _on_item(call, accumulator, item)
            yield item
    except BaseException as e:
        _on_end(call, accumulator, e)
        raise
    _on_end(call, accumulator)


async def _observe_async(items: AsyncIterator[Any], call: LLMCall, accumulator: Any) -> AsyncIterator[Any]:
    try:
        async for item in items:
            _on_item(call, accumulator, item)
            yield item
    except BaseException as e:
        _on_end(call, accumulator, e)
        raise
    _on_end(call, accumulator)


def observe_stream(stream: Any, call: LLMCall, accumulator: Any, is_async: bool) -> None:
    """Route the SDK stream's items through an observer, keeping the stream object itself."""
    items = stream._iterator  # the SDKs' Stream/AsyncStream iterate this attribute
    stream.__dict__["_iterator"] = (_observe_async if is_async else _observe_sync)(items, call, accumulator)


# -- wrapping --------------------------------------------------------------------------

class _Current:
    """While the SDK method runs, `call` is the current call (what nested code sees); an
    exception out of it marks the call failed and goes on to the caller unchanged."""

    __slots__ = ("call", "failed", "token")

    def __init__(self, call: LLMCall | None, failed: Callable[[LLMCall | None, BaseException], None]):
        self.call, self.failed = call, failed

    def __enter__(self) -> None:
        self.token = _CALL.set(self.call)

    def __exit__(self, kind: Any, error: BaseException | None, traceback: Any) -> bool:
        try:
            if error is not None:
                self.failed(self.call, error)
        finally:
            _CALL.reset(self.token)
        return False


def wrap_method(recorder: Recorder, owner: Any, name: str, provider: str, summarise: Callable[[Any], dict[str, Any]],
                accumulator: Callable[[], Any], is_async: bool) -> None:
    # is_async comes from the client class: the SDKs' async create is a decorated plain
    # function returning a coroutine, which inspect does not recognise.
    original = getattr(owner, name)
    if getattr(original, "__tracewh__", None) is recorder:
        return

    def begin(kwargs: dict[str, Any]) -> LLMCall | None:
        return recorder.safely("llm call", LLMCall, recorder, provider, kwargs)

    def end(call: LLMCall | None, result: Any, kwargs: dict[str, Any]) -> None:
        if call is None:
            return
        if kwargs.get("stream"):
            recorder.safely("stream", observe_stream, result, call, accumulator(recorder.capture_content), is_async)
        else:
            call.done()
            recorder.defer(lambda seq: call.finish(summarise(result), seq))

    def failed(call: LLMCall | None, error: BaseException) -> None:
        if call is not None:
            call.done()
            recorder.defer(lambda seq: call.fail(error, seq))

    if is_async:
        async def wrapper(*args: Any, **kwargs: Any) -> Any:
            call = begin(kwargs)
            with _Current(call, failed):
                result = await original(*args, **kwargs)
            end(call, result, kwargs)
            return result
    else:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            call = begin(kwargs)
            with _Current(call, failed):
                result = original(*args, **kwargs)
            end(call, result, kwargs)
            return result

    functools.update_wrapper(wrapper, original)
    wrapper.__tracewh__ = recorder  # type: ignore[attr-defined]
    setattr(owner, name, wrapper)


def wrap_client(recorder: Recorder, client: Any) -> Any:
    module = type(client).__module__.split(".")[0]
    if module == "openai":
        from . import openai_sdk as provider
    elif module == "anthropic":
        from . import anthropic_sdk as provider
    else:
        raise TypeError(f"tracewh can wrap OpenAI and Anthropic clients (sync or async), not {type(client).__name__}")
    is_async = type(client).__name__.startswith("Async")
    provider.wrap(recorder, client, is_async)
    recorder.safely("http hooks", install_http_hooks, client._client, is_async)
    return client
