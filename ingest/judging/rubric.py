"""A rubric file: what to judge (a SQL query over the store), how to ask (a Jinja2 prompt),
what may be answered (a label set or a numeric scale), and who answers (provider:model).

Every mistake is refused before anything is asked, in one line naming the file and field.
The digest covers the parsed definition but its judge list, so a changed query, prompt, label
set or parameter is a new rubric to the answer cache, and an added judge is not; comments and
layout in the YAML file are not either.
"""

from __future__ import annotations

import hashlib
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import yaml

from ...errors import BadInputError

PROVIDERS = ("openai", "anthropic")
FIELDS = {"name", "version", "description", "targets", "prompt", "labels", "scale", "judges", "temperature",
          "max_tokens"}
REQUIRED = ("name", "version", "targets", "prompt", "judges")
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")
DEFAULT_MAX_TOKENS = 1024  # the judge's answer is a label or number and a short reason


@dataclass(frozen=True)
class Judge:
    provider: str  # openai or anthropic
    model: str

    @property
    def rater(self) -> str:
        return f"{self.provider}:{self.model}"


@dataclass(frozen=True)
class Rubric:
    file: str  # where it was read from, for error messages
    name: str
    version: str
    targets: str  # SQL
    prompt: str  # Jinja2 template text
    labels: tuple[str, ...] | None
    scale: tuple[float, float] | None
    judges: tuple[Judge, ...]
    temperature: float | None
    max_tokens: int
    description: str = ""
    digest: str = ""

    @property
    def params(self) -> dict[str, Any]:
        """The request parameters that shape an answer."""
        return {"temperature": self.temperature, "max_tokens": self.max_tokens}

    def params_for(self, judge: Judge) -> dict[str, Any]:
        """What is sent to this judge (part of each answer's cache key): Anthropic's API takes
        no temperature (its SDK has no such parameter), so none is sent there."""
        params = {"max_tokens": self.max_tokens}
        if self.temperature is not None and judge.provider != "anthropic":
            params["temperature"] = self.temperature
        return params

    def error(self, field: str, problem: str) -> BadInputError:
        return BadInputError(self.file, problem, field=field)


def load_rubric(path: str | Path) -> Rubric:
    """The rubric in `path`, checked; BadInputError (file and field) for anything wrong."""
    file = str(path)
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except OSError as e:
        raise BadInputError(file, f"cannot be read: {e.strerror or e}") from None
    except (yaml.YAMLError, UnicodeDecodeError) as e:
        raise BadInputError(file, f"not valid YAML: {' '.join(str(e).split())}") from None
    return parse_rubric(data, file)


def parse_rubric(data: Any, file: str) -> Rubric:
    if not isinstance(data, dict):
        raise BadInputError(file, "a rubric is a YAML mapping (name, version, targets, prompt, labels or scale, judges)")
    if unknown := sorted(set(map(str, data)) - FIELDS):
        raise BadInputError(file, f"unknown field; a rubric has {', '.join(sorted(FIELDS))}", field=unknown[0])
    for name in REQUIRED:
        if data.get(name) in (None, "", []):
            raise BadInputError(file, "is required", field=name)
    name = _text(data, "name", file)
    if not NAME.match(name):
        raise BadInputError(file, f"{name!r} is not a rubric name: letters, digits, '_', '.', '-' (up to 100)",
                            field="name")
    version = data["version"]
    if isinstance(version, bool) or not isinstance(version, (int, str)):
        raise BadInputError(file, "must be a number or a string", field="version")
    labels, scale = _answers(data, file)
    rubric = Rubric(file=file, name=name, version=str(version), targets=_text(data, "targets", file),
                    prompt=_text(data, "prompt", file), labels=labels, scale=scale, judges=_judges(data["judges"], file),
                    temperature=_temperature(data.get("temperature"), file),
                    max_tokens=_max_tokens(data.get("max_tokens", DEFAULT_MAX_TOKENS), file),
                    description=str(data.get("description") or ""))
    return _with_digest(rubric)


def _text(data: dict, field: str, file: str) -> str:
    value = data[field]
    if not isinstance(value, str) or not value.strip():
        raise BadInputError(file, "must be non-empty text", field=field)
    return value


def _answers(data: dict, file: str) -> tuple[tuple[str, ...] | None, tuple[float, float] | None]:
    """Exactly one of `labels` (a set of distinct non-empty names) and `scale` ([low, high])."""
    if ("labels" in data) == ("scale" in data):
        raise BadInputError(file, "give either `labels` (a label set) or `scale` ([low, high]), not both or neither",
                            field="labels" if "labels" in data else "scale")
    if "labels" in data:
        labels = data["labels"]
        if not isinstance(labels, list) or not labels:
            raise BadInputError(file, "must be a non-empty list of labels", field="labels")
        if any(not isinstance(x, (str, int)) or isinstance(x, bool) or not str(x).strip() for x in labels):
            raise BadInputError(file, "every label must be non-empty text", field="labels")
        names = tuple(str(x).strip() for x in labels)
        if len({n.casefold() for n in names}) != len(names):
            raise BadInputError(file, "labels must be distinct (case is ignored when answers are read)", field="labels")
        return names, None
    scale = data["scale"]
    if (not isinstance(scale, list) or len(scale) != 2
            or any(isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x) for x in scale)
            or scale[0] >= scale[1]):
        raise BadInputError(file, "must be [low, high]: two finite numbers, low < high", field="scale")
    return None, (float(scale[0]), float(scale[1]))


def _judges(value: Any, file: str) -> tuple[Judge, ...]:
    items = value if isinstance(value, list) else [value]
    judges = []
    for item in items:
        provider, sep, model = str(item).partition(":")
        if not sep or not model.strip() or not isinstance(item, str):
            raise BadInputError(file, f"{item!r} is not provider:model (e.g. openai:gpt-5-nano)", field="judges")
        if provider not in PROVIDERS:
            raise BadInputError(file, f"unknown provider {provider!r} in {item!r}; known: {', '.join(PROVIDERS)}",
                                field="judges")
        judges.append(Judge(provider, model.strip()))
    if len(set(judges)) != len(judges):
        raise BadInputError(file, "a judge is listed twice", field="judges")
    return tuple(judges)


def _temperature(value: Any, file: str) -> float | None:
    if value is None:
        return None  # the provider's default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 2:
        raise BadInputError(file, "must be a number from 0 to 2", field="temperature")
    return float(value)


def _max_tokens(value: Any, file: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise BadInputError(file, "must be a whole number of tokens, at least 1", field="max_tokens")
    return value


def _with_digest(rubric: Rubric) -> Rubric:
    # The judge list is left out: adding a judge to a rubric asks only the new judge (each
    # answer's key names its judge anyway).
    definition = {"name": rubric.name, "version": rubric.version, "targets": rubric.targets, "prompt": rubric.prompt,
                  "labels": rubric.labels, "scale": rubric.scale, "params": rubric.params}
    digest = hashlib.sha256(orjson.dumps(definition, option=orjson.OPT_SORT_KEYS)).hexdigest()[:32]
    return Rubric(**{**rubric.__dict__, "digest": digest})
