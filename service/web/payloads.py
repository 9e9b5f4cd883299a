"""One event for the payload panel: its envelope, then its payload in readable sections
(messages, tool arguments and results, a state change as a diff), then the whole payload
as indented JSON. Everything is returned as text; the template escapes it.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any

import orjson

from .render import cell, pretty_json

ENVELOPE = ("kind", "seq", "ts", "task_id", "subtask", "agent", "model", "tool_name", "prompt_tokens",
            "completion_tokens", "reasoning_tokens", "cached_tokens", "cost_usd", "latency_s", "finish_reason",
            "score", "span_id", "parent_span_id", "event_id", "source")
TEXT_KEYS = {"instruction": "Instruction", "system": "System prompt", "content": "Response", "text": "Text",
             "message": "Message", "rationale": "Rationale", "result_preview": "Result preview"}
JSON_KEYS = {"tool_calls": "Tool calls", "arguments": "Arguments", "result": "Result", "votes": "Votes",
             "error": "Error", "entries": "Entries"}


@dataclass
class Section:
    title: str
    kind: str  # text | json | messages | diff
    body: Any  # str; for messages [(role, text)]; for diff [(css class, line)]


def envelope(event: dict[str, Any]) -> list[tuple[str, str]]:
    return [(name, cell(event.get(name))) for name in ENVELOPE if event.get(name) is not None]


def sections(event: dict[str, Any]) -> list[Section]:
    payload = _payload(event.get("payload"))
    if not isinstance(payload, dict):
        return [Section("Payload (JSON)", "json", pretty_json(payload))] if payload is not None else []
    found = []
    if isinstance(payload.get("messages"), list):
        found.append(Section("Messages", "messages", [_message(m) for m in payload["messages"]]))
    found += [Section(title, "text", _text(payload[key])) for key, title in TEXT_KEYS.items() if payload.get(key)]
    found += [Section(title, "json", pretty_json(payload[key])) for key, title in JSON_KEYS.items()
              if payload.get(key) is not None]
    if event.get("kind") == "state_diff" or {"before", "after"} <= payload.keys():
        found.append(Section("Change", "diff", diff_lines(payload.get("before"), payload.get("after"))))
    return [*found, Section("Payload (JSON)", "json", pretty_json(payload))]


def diff_lines(before: Any, after: Any) -> list[tuple[str, str]]:
    """A unified diff of the two states as text (objects as indented JSON), one class per line."""
    lines = difflib.unified_diff(_lines(before), _lines(after), "before", "after", lineterm="", n=3)
    return [(_diff_class(line), line) for line in lines]


def _payload(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return orjson.loads(value)
        except orjson.JSONDecodeError:
            return value
    return value


def _message(message: Any) -> tuple[str, str]:
    if not isinstance(message, dict):
        return "", _text(message)
    return str(message.get("role") or ""), _text(message.get("content"))


def _text(value: Any) -> str:
    return value if isinstance(value, str) else pretty_json(value)


def _lines(value: Any) -> list[str]:
    return [] if value is None else _text(value).splitlines()


def _diff_class(line: str) -> str:
    if line.startswith(("---", "+++")):
        return "file"
    return {"@": "hunk", "+": "add", "-": "del"}.get(line[:1], "same")
