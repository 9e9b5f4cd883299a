"""Which files are DELEGATE-52's, which of its three formats each one is, and their rows.

All three are JSON Lines told apart by their first record's keys (docs/formats/delegate52.md
§1 relay, §8 QA, §9 dataset); every one has `sample_id`, so the more specific relay keys
are tried first.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ...context import AdapterContext
from ...fields import Fields
from ...jsonlines import json_lines
from ...sources import SourceFile

RELAY, QA, DATASET = "delegate52-relay", "delegate52-qa", "delegate52-dataset"
RELAY_KEYS = ("rid_chain", "round_trip_num", "round_trip_direction", "sample_id")
DATASET_KEYS = frozenset({"sample_id", "sample_type", "states", "files"})


def sniff(file: SourceFile, ctx: AdapterContext) -> str | None:
    first = ctx.first(file)
    if first is None:
        return None
    if all(k in first for k in RELAY_KEYS):
        return RELAY
    if _is_qa(first):
        return QA
    return DATASET if DATASET_KEYS <= first.keys() else None


def _is_qa(first: dict[str, Any]) -> bool:
    return ("direction" in first and "sample_id" in first and "rid_chain" not in first
            and ("edit_prompt" in first or "forward_response_id" in first))


def rows(file: SourceFile, ctx: AdapterContext) -> Iterator[Fields]:
    """Every line of a file, as typed fields naming file and line in their errors."""
    for line, record in json_lines(file, ctx.limits.max_line_bytes, ctx.progress):
        yield Fields(record, file.display, line)
