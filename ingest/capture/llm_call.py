"""Recording one SDK request: the wrapper put on a client's create method, streams, retries.

Per request: one `llm_call` event, written before the response (or the stream's last item,
or the exception) reaches the caller. Attempts and retries are read from the SDK's own HTTP
client through event hooks (the SDKs number retries in the `x-stainless-retry-count` header).
Streams keep their SDK type: only their item iterator is observed.

Without `capture_content` an event holds no text: no messages, no tool-call arguments, no
provider error message (only the error's class and HTTP status), and of the request's parameters
only those that cannot carry free text (PARAMS_WITHOUT_TEXT): shapes, counts, names and ids.
"""

from __future__ import annotations

import functools
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextvars import ContextVar
from typing import Any

import orjson

from ...schema.content import PARAMS_WITHOUT_TEXT  # shared with `release --no-content`
from .frame import Frame, new_span, now
from .runlog import RunLog

_CALL: ContextVar[LLMCall | None] = ContextVar("tracewh_llm_call", default=None)
SKIPPED_PARAMS = {"messages", "tools", "system", "extra_headers", "extra_query", "extra_body", "timeout", "metadata"}


class LLMCall:
    """One request in flight: when it started, where it belongs, what the HTTP layer saw."""

    def __init__(self, log: RunLog, provider: str, kwargs: dict[str, Any]):
        self.log, self.provider, self.kwargs = log, provider, kwargs
        self.frame: Frame = log.frame()
        self.step = None
        if self.frame.agent == "orchestrator" and self.frame.task_id is not None:
            self.frame.steps[0] += 1
            self.step = self.frame.steps[0]
        self.ts, self.started = now(), time.perf_counter()
        self.first_item: float | None = None
        self.attempts: list[dict[str, int]] = []

    def see_response(self, status: int, retry: int) -> None:
        self.attempts.append({"status": status, "retry": retry})

    def _params(self) -> dict[str, Any]:
        kept = {k: v for k, v in self.kwargs.items() if k not in SKIPPED_PARAMS and isinstance(v, (str, int, float, bool))}
        return kept if self.log.capture_content else {k: v for k, v in kept.items() if k in PARAMS_WITHOUT_TEXT}

    def _payload(self, **extra: Any) -> dict[str, Any]:
        kwargs = self.kwargs
        payload = {"provider": self.provider, "requested_model": kwargs.get("model"), "step": self.step,
                   "params": self._params(), "tools_offered": [_tool_name(t) for t in kwargs.get("tools") or []],
                   "attempts": self.attempts, "retries": max((a["retry"] for a in self.attempts), default=0)}
        if self.log.capture_content:
            payload["messages"] = orjson.loads(orjson.dumps(kwargs.get("messages"), default=str))
            if "system" in kwargs:
                payload["system"] = orjson.loads(orjson.dumps(kwargs["system"], default=str))
        return payload | extra

    def _tool_calls(self, calls: list[dict[str, Any]] | None) -> list[dict[str, Any]] | None:
        if calls is None or self.log.capture_content:
            return calls
        return [{"id": c.get("id"), "name": c.get("name")} for c in calls]

    def finish(self, summary: dict[str, Any]) -> None:
        """Write the call's event (the response, or a stream's summary, is in)."""
        latency = time.perf_counter() - self.started
        model = summary.get("model") or self.kwargs.get("model")
        self.log.note_model(model if self.frame.agent == "orchestrator" else None)
        extra = {k: summary.get(k) for k in ("response_id", "request_id", "usage", "stop_sequence")}
        extra["tool_calls"] = self._tool_calls(summary.get("tool_calls"))
        if self.first_item is not None:
            extra |= {"stream": True, "ttft_s": self.first_item - self.started}
        if self.log.capture_content:
            extra["content"] = summary.get("content")
        cost = self.log.prices.cost(model, summary.get("prompt_tokens"), summary.get("completion_tokens"),
                                    summary.get("cached_tokens"))
        self.log.emit("llm_call", self.frame, ts=self.ts, span_id=new_span(), model=model,
                      prompt_tokens=summary.get("prompt_tokens"), completion_tokens=summary.get("completion_tokens"),
                      reasoning_tokens=summary.get("reasoning_tokens"), cached_tokens=summary.get("cached_tokens"),
                      finish_reason=summary.get("finish_reason"), latency_s=latency, cost_usd=cost,
                      payload=self._payload(**extra))

    def fail(self, error: BaseException) -> None:
        """Write the call's event for a request that raised. Without capture_content only the error's
        class and HTTP status are kept: a provider's message (and its `code`, free text to some)
        can echo the request's content ("... 'Where is the Louvre?' is too long")."""
        detail = {"type": type(error).__name__, "status": getattr(error, "status_code", None)}
        if self.log.capture_content:
            detail |= {"code": getattr(error, "code", None), "message": str(error)[:500]}
        self.log.emit("llm_call", self.frame, ts=self.ts, span_id=new_span(), model=self.kwargs.get("model"),
                      latency_s=time.perf_counter() - self.started, finish_reason="error",
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
    call.log.safely("stream item", accumulator.add, item)


def _on_end(call: LLMCall, accumulator: Any, error: BaseException | None = None) -> None:
    if error is None:
        call.log.safely("llm call", lambda: call.finish(accumulator.summary()))
    else:
        call.log.safely("llm call", call.fail, error)


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
    exception out of it is recorded and goes on to the caller unchanged."""

    __slots__ = ("call", "token")

    def __init__(self, call: LLMCall | None):
        self.call = call

    def __enter__(self) -> None:
        self.token = _CALL.set(self.call)

    def __exit__(self, kind: Any, error: BaseException | None, traceback: Any) -> bool:
        try:
            if error is not None and self.call is not None:
                self.call.log.safely("llm call", self.call.fail, error)
        finally:
            _CALL.reset(self.token)
        return False


def wrap_method(log: RunLog, owner: Any, name: str, provider: str, summarise: Callable[[Any], dict[str, Any]],
                accumulator: Callable[[bool], Any], is_async: bool) -> None:
    # is_async comes from the client class: the SDKs' async create is a decorated plain
    # function returning a coroutine, which inspect does not recognise.
    original = getattr(owner, name)
    if getattr(original, "__tracewh__", None) is log:
        return

    def begin(kwargs: dict[str, Any]) -> LLMCall | None:
        return log.safely("llm call", LLMCall, log, provider, kwargs)

    def end(call: LLMCall | None, result: Any, kwargs: dict[str, Any]) -> None:
        if call is None:
            return
        if kwargs.get("stream"):
            log.safely("stream", observe_stream, result, call, accumulator(log.capture_content), is_async)
        else:
            log.safely("llm call", lambda: call.finish(summarise(result)))

    if is_async:
        async def wrapper(*args: Any, **kwargs: Any) -> Any:
            call = begin(kwargs)
            with _Current(call):
                result = await original(*args, **kwargs)
            end(call, result, kwargs)
            return result
    else:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            call = begin(kwargs)
            with _Current(call):
                result = original(*args, **kwargs)
            end(call, result, kwargs)
            return result

    functools.update_wrapper(wrapper, original)
    wrapper.__tracewh__ = log  # type: ignore[attr-defined]
    setattr(owner, name, wrapper)
