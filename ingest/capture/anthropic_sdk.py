"""What an Anthropic message (or its event stream) says: model, usage, stop reason, tool_use blocks.

Anthropic counts cache reads and writes apart from input_tokens; prompt_tokens here is
their sum (the OpenAI convention, so views compare like with like), cached_tokens the
cache reads, and the raw usage is kept in the payload.
"""

from __future__ import annotations

from typing import Any

from ..toolargs import parse_arguments
from .llm_call import wrap_method


def wrap(log: Any, client: Any, is_async: bool) -> None:
    wrap_method(log, client.messages, "create", "anthropic", summarise, StreamSummary, is_async)


def _usage(usage: Any, output_tokens: int | None = None) -> dict[str, Any]:
    if usage is None:
        return {}
    read = getattr(usage, "cache_read_input_tokens", None) or 0
    written = getattr(usage, "cache_creation_input_tokens", None) or 0
    return {"prompt_tokens": (usage.input_tokens or 0) + read + written,
            "completion_tokens": output_tokens if output_tokens is not None else usage.output_tokens,
            "cached_tokens": read, "usage": {"input_tokens": usage.input_tokens, "cache_read_input_tokens": read,
                                             "cache_creation_input_tokens": written}}


def _blocks(content: list[Any]) -> tuple[str | None, list[dict[str, Any]]]:
    text = "".join(b.text for b in content if getattr(b, "type", None) == "text") or None
    calls = [{"id": b.id, "name": b.name, "arguments": b.input if isinstance(b.input, dict) else parse_arguments(b.input)}
             for b in content if getattr(b, "type", None) == "tool_use"]
    return text, calls


def summarise(message: Any) -> dict[str, Any]:
    text, calls = _blocks(message.content or [])
    return {"model": message.model, "response_id": message.id, "request_id": getattr(message, "_request_id", None),
            "finish_reason": message.stop_reason, "stop_sequence": message.stop_sequence, "tool_calls": calls,
            "content": text, **_usage(message.usage)}


class StreamSummary:
    """Accumulates message_start / content_block_* / message_delta events (text only when captured)."""

    def __init__(self, keep_text: bool = False) -> None:
        self.keep_text = keep_text
        self.message: Any = None
        self.stop_reason: str | None = None
        self.output_tokens: int | None = None
        self.blocks: dict[int, dict[str, Any]] = {}

    def add(self, event: Any) -> None:
        kind = event.type
        if kind == "message_start":
            self.message = event.message
        elif kind == "content_block_start":
            block = event.content_block
            self.blocks[event.index] = {"type": block.type, "id": getattr(block, "id", None),
                                        "name": getattr(block, "name", None), "text": "", "json": ""}
        elif kind == "content_block_delta":
            block, delta = self.blocks.setdefault(event.index, {"type": "text", "text": "", "json": ""}), event.delta
            if self.keep_text:
                block["text"] += getattr(delta, "text", None) or ""
            block["json"] += getattr(delta, "partial_json", None) or ""
        elif kind == "message_delta":
            self.stop_reason = event.delta.stop_reason or self.stop_reason
            self.output_tokens = getattr(event.usage, "output_tokens", None)

    def summary(self) -> dict[str, Any]:
        blocks = [b for _, b in sorted(self.blocks.items())]
        calls = [{"id": b["id"], "name": b["name"], "arguments": parse_arguments(b["json"])}
                 for b in blocks if b["type"] == "tool_use"]
        message = self.message
        return {"model": getattr(message, "model", None), "response_id": getattr(message, "id", None),
                "finish_reason": self.stop_reason, "tool_calls": calls,
                "content": "".join(b["text"] for b in blocks if b["type"] == "text") or None,
                **_usage(getattr(message, "usage", None), self.output_tokens)}
