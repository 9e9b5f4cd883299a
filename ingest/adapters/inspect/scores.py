"""Inspect score values as tracewh scores (docs/formats/inspect.md §6, `Score`; §5, `results`).

The `score` column is what Inspect's own metrics compute with: `value_to_float()` of
inspect_ai.scorer (C 1, P 0.5, I and N 0, numbers as they are, "yes"/"true" 1, "no"/"false" 0,
numeric strings parsed, anything else 0). A value that is not a finite number after that (NaN
from `Score.unscored()`, infinities) is a NULL score; the raw value is kept in the payload,
non-finite numbers as the strings "NaN", "Infinity", "-Infinity" (JSON has no such numbers).
"""

from __future__ import annotations

import math
from typing import Any

import orjson

CORRECT, INCORRECT, PARTIAL, NOANSWER = "C", "I", "P", "N"


def value_to_float(value: Any) -> float | None:
    """Inspect's value_to_float with its default letters; None where it gives no finite number."""
    if value == CORRECT:
        number = 1.0
    elif value == PARTIAL:
        number = 0.5
    elif value in (INCORRECT, NOANSWER):
        number = 0.0
    elif isinstance(value, (int, float)):  # bool included, as in Inspect
        number = float(value)
    elif isinstance(value, str):
        number = _fromname_text(value.lower())
    else:
        number = 0.0  # lists, dicts, null: Inspect warns and uses 0
    return number if math.isfinite(number) else None


def _fromname_text(text: str) -> float:
    if text in ("yes", "true"):
        return 1.0
    if text in ("no", "false"):
        return 0.0
    try:
        number = float(text)
    except ValueError:
        return 0.0
    return number if math.isfinite(number) else 0.0  # Inspect parses finite numbers only


def raw(value: Any) -> Any:
    """A value as JSON can hold it: non-finite numbers (also inside lists and dicts) as text."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dict):
        return {k: raw(v) for k, v in value.items()}
    if isinstance(value, list):
        return [raw(v) for v in value]
    return value


def sample_scores(name: str, score: dict[str, Any]) -> list[tuple[str, str | None, Any]]:
    """(scorer, dict key or None, raw value) rows of one Score: a dict value gives one row per
    key, named `scorer/key`, as Inspect's results give one EvalScore per key."""
    value = score.get("value")
    if isinstance(value, dict):
        return [(f"{name}/{key}", key, v) for key, v in value.items()]
    return [(name, None, value)]


def metric_scorer(eval_score: dict[str, Any]) -> str:
    """The scorer a reported metric belongs to, named as sample scores are: an EvalScore of a
    dict key has name = key and scorer = the scorer's name, giving `scorer/key`."""
    name, scorer = (name_text(eval_score.get(k)) for k in ("name", "scorer"))
    return f"{scorer}/{name}" if scorer and name and scorer != name else str(name or scorer)


def name_text(value: Any) -> str | None:
    """A scorer's or metric's name as text (a log holding an object there still names it, hashably)."""
    if value is None or isinstance(value, str):
        return value
    return orjson.dumps(value, default=str).decode() if isinstance(value, (dict, list)) else str(value)
