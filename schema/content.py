"""Which parts of an event are content: what people and models wrote, tool arguments and results.

Live capture records none of it unless asked (`capture_content=True`, ingest/capture/), and a
release made with `--no-content` (analytics/release/) removes it from stored events: one
definition for both, so a `--no-content` release of a run captured with content holds what
capturing it without content would have stored (tests/test_release.py checks exactly that).

Content is found by payload key, at any depth, whatever the source format: `text`, `messages`,
`arguments`, `result`, ... (CONTENT_KEYS), and OpenTelemetry attribute names made of such parts
(`gen_ai.tool.call.arguments`, `llm.input_messages.0.message.content`). What stays: shapes,
counts, names, ids, statuses and numbers, which every metric view reads. An error keeps its
class and status, never its message (a provider's message can echo the prompt).
"""

from __future__ import annotations

import re
from typing import Any

# Payload keys whose values are content, wherever they appear (nested objects and lists too).
CONTENT_KEYS = frozenset({
    "messages", "system", "system_instructions", "content", "text", "instruction", "message", "prompt", "prompts",
    "completion", "input_messages", "output_messages", "arguments", "result", "result_preview", "subtask_result",
    "rationale", "reason", "explanation", "before", "after",
})
# OpenInference's spellings of a tool's arguments and result, and of a chain's input and output.
CONTENT_ATTRIBUTES = frozenset({"input.value", "output.value"})
# Request parameters that cannot carry free text: numbers, flags and fixed vocabularies (`user`,
# `stop`, `prompt_cache_key`, ... can hold text). Capture keeps only these without content.
PARAMS_WITHOUT_TEXT = frozenset({
    "model", "temperature", "top_p", "top_k", "max_tokens", "max_completion_tokens", "n", "seed", "stream",
    "presence_penalty", "frequency_penalty", "parallel_tool_calls", "tool_choice", "reasoning_effort",
    "service_tier", "logprobs", "top_logprobs", "store", "verbosity",
})
ERROR_KEYS_WITHOUT_TEXT = ("type", "status")  # what capture keeps of a failed call's error
REMOVED = "[content removed]"  # an error message's place: the event still says that something failed
_ERROR_CLASS = re.compile(r"^([A-Za-z_][\w.]{0,127})(?::|\(|$)")


def is_content_key(key: str) -> bool:
    """Whether a payload key (or an OpenTelemetry attribute name) holds content."""
    return key in CONTENT_KEYS or key in CONTENT_ATTRIBUTES or (
        "." in key and any(part in CONTENT_KEYS for part in key.split(".")))


def without_content(payload: dict[str, Any]) -> dict[str, Any]:
    """The payload with every content value removed (a new dict; the argument is not changed)."""
    return {key: _kept(key, value) for key, value in payload.items() if not is_content_key(str(key))}


def _kept(key: str, value: Any) -> Any:
    if key == "params" and isinstance(value, dict):
        return {k: v for k, v in value.items() if k in PARAMS_WITHOUT_TEXT}
    if key == "error":
        return error_without_text(value)
    return _walk(value)


def _walk(value: Any) -> Any:
    if isinstance(value, dict):
        return without_content(value)
    if isinstance(value, list):
        return [_walk(v) for v in value]
    return value


def error_without_text(error: Any) -> Any:
    """An error's class and status, not its message: {"type", "status"} of an object, the class
    name of "KeyError: 'x'" (or a bare word, kept), REMOVED for any other text."""
    if isinstance(error, dict):
        return {k: error[k] for k in ERROR_KEYS_WITHOUT_TEXT if k in error}
    if isinstance(error, str):
        found = _ERROR_CLASS.match(error.strip())
        return found.group(1) if found else REMOVED
    return _walk(error)
