"""Reading what a judge answered, leniently in form and strictly in content.

Lenient: the JSON object may come fenced (```json ... ```) or with text around it, a label may
differ from the rubric's in case and surrounding spaces, a score may be a numeric string.
Strict: a label outside the set, a score off the scale or not finite, or no JSON object at
all is an invalid answer, kept with its raw text; nothing is ever guessed.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

from .rubric import Rubric

_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)


@dataclass(frozen=True)
class Answer:
    valid: bool
    label: str | None = None
    value: float | None = None
    reason: str | None = None
    raw: str | None = None  # the answer as received, kept when it is invalid
    problem: str | None = None  # why it is invalid


def read_answer(text: str | None, rubric: Rubric) -> Answer:
    found = _json_object(text or "")
    if found is None:
        return Answer(False, raw=text, problem="no JSON object in the answer")
    reason = found.get("reason")
    reason = reason if isinstance(reason, str) else (None if reason is None else json.dumps(reason))
    if rubric.labels is not None:
        label = _label(found.get("label"), rubric.labels)
        if label is None:
            return Answer(False, reason=reason, raw=text, problem="label missing or not in the rubric's label set")
        return Answer(True, label=label, reason=reason)
    value = _number(found.get("score"))
    low, high = rubric.scale
    if value is None or not low <= value <= high:
        return Answer(False, reason=reason, raw=text, problem=f"score missing or not a number from {low:g} to {high:g}")
    return Answer(True, value=value, reason=reason)


def _json_object(text: str) -> dict[str, Any] | None:
    """The first JSON object in the text: the whole text, a fenced block, or from the first '{'."""
    candidates = [text.strip(), *(m.group(1).strip() for m in _FENCE.finditer(text))]
    decoder = json.JSONDecoder()
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    for start in (m.start() for m in re.finditer(r"\{", text)):
        try:
            value, _ = decoder.raw_decode(text, start)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    return None


def _label(value: Any, labels: tuple[str, ...]) -> str | None:
    if not isinstance(value, (str, int)) or isinstance(value, bool):
        return None
    wanted = str(value).strip().casefold()
    return next((label for label in labels if label.casefold() == wanted), None)


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            return None
    if not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)
