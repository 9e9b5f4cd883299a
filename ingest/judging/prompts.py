"""A rubric's prompt, rendered for one target: Jinja2 in a sandbox, every variable required.

The template sees the target's columns and nothing else; a name that is not a column is an
error before anything is asked (checked against the query's columns, then by rendering the
first target), never an empty string in a paid prompt. The sandbox keeps a rubric file from
reaching Python internals. The instruction about the answer's form is tracewh's, appended
after the rubric's text so every judge is asked the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from jinja2 import StrictUndefined, TemplateError, meta
from jinja2.sandbox import SandboxedEnvironment

from .rubric import Rubric

_ENV = SandboxedEnvironment(undefined=StrictUndefined, autoescape=False, keep_trailing_newline=True)


class Prompt:
    def __init__(self, rubric: Rubric, columns: Sequence[str]):
        self.rubric = rubric
        try:
            tree = _ENV.parse(rubric.prompt)
            self.template = _ENV.from_string(tree)
        except TemplateError as e:
            raise rubric.error("prompt", f"not a valid Jinja2 template: {e}") from None
        if missing := sorted(meta.find_undeclared_variables(tree) - set(columns)):
            raise rubric.error("prompt", f"uses {missing[0]!r}, which the targets query does not return "
                                         f"(its columns: {', '.join(columns)})")

    def render(self, target: dict[str, Any]) -> str:
        try:
            return self.template.render(target)
        except TemplateError as e:
            raise self.rubric.error("prompt", f"cannot be rendered for target {target.get('target_id')!r}: {e}") from None


def instruction(rubric: Rubric) -> str:
    """How to answer (the system prompt): one JSON object, a label of the set or a number on the scale."""
    if rubric.labels is not None:
        choice = ", ".join(f'"{label}"' for label in rubric.labels)
        return ("You are a careful evaluator. Answer with one JSON object and nothing else: "
                f'{{"label": <exactly one of {choice}>, "reason": <one or two sentences>}}.')
    low, high = rubric.scale
    return ("You are a careful evaluator. Answer with one JSON object and nothing else: "
            f'{{"score": <a number from {low:g} to {high:g}>, "reason": <one or two sentences>}}.')


def answer_schema(rubric: Rubric) -> dict[str, Any]:
    """The answer's JSON schema (OpenAI's structured output, Anthropic's forced tool)."""
    if rubric.labels is not None:
        answer = {"label": {"type": "string", "enum": list(rubric.labels)}}
    else:
        answer = {"score": {"type": "number", "minimum": rubric.scale[0], "maximum": rubric.scale[1]}}
    return {"type": "object", "properties": {**answer, "reason": {"type": "string"}},
            "required": [*answer, "reason"], "additionalProperties": False}
