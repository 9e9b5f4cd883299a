"""Undo Inspect's condensing of a sample (docs/formats/inspect.md §6, "Attachments" and "Condensed events").

Inspect stores every string over 100 characters once, in `sample.attachments`, and leaves
`attachment://<hash>` in its place (very old logs: `tc://<hash>`); model inputs are stored as
ranges (`input_refs`) into a pool of unique messages, `sample.events_data.messages`. Events
tracewh stores carry the text itself: a reader of the warehouse has no attachments table.
"""

from __future__ import annotations

from typing import Any

REF_PREFIXES = ("attachment://", "tc://")


class Content:
    """A sample's attachments and message pool."""

    def __init__(self, sample: dict[str, Any]):
        transcript = sample.get("transcript") if isinstance(sample.get("transcript"), dict) else {}
        attachments = sample.get("attachments") or transcript.get("content") or {}  # `content`: log version 1
        self.attachments = attachments if isinstance(attachments, dict) else {}
        pools = sample.get("events_data") if isinstance(sample.get("events_data"), dict) else {}
        pool = pools.get("messages")
        self.messages = pool if isinstance(pool, list) else []

    def resolve(self, value: Any) -> Any:
        """`value` with every attachment ref replaced by its text (an unknown ref stays as it is)."""
        if isinstance(value, str):
            if value.startswith(REF_PREFIXES):
                text = self.attachments.get(value.split("://", 1)[1])
                return text if isinstance(text, str) else value
            return value
        if isinstance(value, dict):
            return {k: self.resolve(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.resolve(v) for v in value]
        return value

    def model_input(self, event: dict[str, Any]) -> list[Any]:
        """A model event's input messages: its `input`, or its ranges into the pool, resolved."""
        refs = event.get("input_refs")
        if not isinstance(refs, list) or event.get("input"):
            return self.resolve(event.get("input") or [])
        messages: list[Any] = []
        for pair in refs:
            if isinstance(pair, list) and len(pair) == 2 and all(isinstance(i, int) for i in pair):
                messages += self.messages[pair[0]:pair[1]]
        return self.resolve(messages)
