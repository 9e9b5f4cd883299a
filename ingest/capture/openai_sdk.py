"""What an OpenAI chat completion (or its stream) says: model, usage, finish reason, tool calls."""

from __future__ import annotations

from typing import Any

from ..toolargs import parse_arguments
from .llm_call import wrap_method


def wrap(log: Any, client: Any, is_async: bool) -> None:
    wrap_method(log, client.chat.completions, "create", "openai", summarise, StreamSummary, is_async)


def _usage(usage: Any) -> dict[str, Any]:
    if usage is None:
        return {}
    details_out = getattr(usage, "completion_tokens_details", None)
    details_in = getattr(usage, "prompt_tokens_details", None)
    return {"prompt_tokens": usage.prompt_tokens, "completion_tokens": usage.completion_tokens,
            "reasoning_tokens": getattr(details_out, "reasoning_tokens", None),
            "cached_tokens": getattr(details_in, "cached_tokens", None)}


def summarise(completion: Any) -> dict[str, Any]:
    choice = completion.choices[0] if completion.choices else None
    message = choice.message if choice else None
    calls = [{"id": t.id, "name": t.function.name, "arguments": parse_arguments(t.function.arguments)}
             for t in (getattr(message, "tool_calls", None) or []) if getattr(t, "function", None)]
    return {"model": completion.model, "response_id": completion.id,
            "request_id": getattr(completion, "_request_id", None),
            "finish_reason": choice.finish_reason if choice else None, "tool_calls": calls,
            "content": getattr(message, "content", None), **_usage(completion.usage)}


class StreamSummary:
    """Accumulates chat.completion.chunk items (text only when content is captured)."""

    def __init__(self, keep_text: bool = False) -> None:
        self.keep_text = keep_text
        self.model = self.response_id = self.finish_reason = None
        self.text: list[str] = []
        self.calls: dict[int, dict[str, Any]] = {}
        self.usage: Any = None

    def add(self, chunk: Any) -> None:
        self.model, self.response_id = chunk.model or self.model, chunk.id or self.response_id
        if chunk.usage is not None:
            self.usage = chunk.usage
        for choice in chunk.choices or []:
            self.finish_reason = choice.finish_reason or self.finish_reason
            delta = choice.delta
            if self.keep_text and delta.content:
                self.text.append(delta.content)
            for t in delta.tool_calls or []:
                call = self.calls.setdefault(t.index, {"id": None, "name": "", "arguments": ""})
                call["id"] = t.id or call["id"]
                if t.function is not None:
                    call["name"] += t.function.name or ""
                    call["arguments"] += t.function.arguments or ""

    def summary(self) -> dict[str, Any]:
        calls = [{"id": c["id"], "name": c["name"], "arguments": parse_arguments(c["arguments"])}
                 for _, c in sorted(self.calls.items())]
        return {"model": self.model, "response_id": self.response_id, "finish_reason": self.finish_reason,
                "tool_calls": calls, "content": "".join(self.text) or None, **_usage(self.usage)}
