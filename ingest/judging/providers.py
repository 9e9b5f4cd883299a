"""Asking a judge through its provider's SDK, in the way each API best supports a JSON answer.

OpenAI (and any OpenAI-compatible endpoint): chat completions with a strict JSON schema as
`response_format`. Anthropic: a forced tool whose input schema is the answer. Endpoints and
keys come from the SDKs' own environment variables (OPENAI_BASE_URL, OPENAI_API_KEY,
ANTHROPIC_BASE_URL, ANTHROPIC_API_KEY); rate limits (429) and server errors (5xx) are retried
with backoff by the SDKs themselves (`max_retries`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import orjson

from ...errors import UsageError
from .prompts import answer_schema, instruction
from .rubric import Judge, Rubric

MAX_RETRIES = 6
TIMEOUT_S = 120.0


@dataclass
class Reply:
    """One answered request: the answer's text and what the call took."""

    text: str | None
    model: str | None
    prompt_tokens: int | None
    completion_tokens: int | None
    cached_tokens: int | None
    finish_reason: str | None
    request_id: str | None
    latency_s: float
    meta: dict[str, Any] = field(default_factory=dict)


class CallFailed(Exception):
    """A request that failed after the SDK's retries; `fatal` when asking again cannot help
    (a bad key, an unknown model, a refused request)."""

    def __init__(self, judge: Judge, error: Exception):
        status = getattr(error, "status_code", None)
        self.fatal = status is not None and 400 <= status < 500 and status not in (408, 409, 429)
        message = " ".join(str(getattr(error, "message", None) or error).split())[:300]
        super().__init__(f"{judge.rater}: {type(error).__name__}{f' ({status})' if status else ''}: {message}")


class OpenAIJudge:
    def __init__(self, judge: Judge, rubric: Rubric):
        import openai

        self.judge, self.rubric, self.errors = judge, rubric, (openai.APIError,)
        try:
            self.client = openai.OpenAI(max_retries=MAX_RETRIES, timeout=TIMEOUT_S)
        except openai.OpenAIError as e:  # no key: the SDK says which variable to set
            raise UsageError(f"{rubric.file}: judge {judge.rater}: {e}") from None
        self.system = instruction(rubric)
        self.response_format = {"type": "json_schema",
                                "json_schema": {"name": "answer", "strict": True, "schema": answer_schema(rubric)}}

    def ask(self, prompt: str) -> Reply:
        params = {} if self.rubric.temperature is None else {"temperature": self.rubric.temperature}
        started = time.perf_counter()
        try:
            completion = self.client.chat.completions.create(
                model=self.judge.model, messages=[{"role": "system", "content": self.system},
                                                  {"role": "user", "content": prompt}],
                max_completion_tokens=self.rubric.max_tokens, response_format=self.response_format, **params)
        except self.errors as e:
            raise CallFailed(self.judge, e) from e
        latency = time.perf_counter() - started
        choice = completion.choices[0] if completion.choices else None
        usage = completion.usage
        cached = getattr(getattr(usage, "prompt_tokens_details", None), "cached_tokens", None)
        return Reply(choice.message.content if choice else None, completion.model,
                     usage.prompt_tokens if usage else None, usage.completion_tokens if usage else None, cached,
                     choice.finish_reason if choice else None, getattr(completion, "_request_id", None), latency,
                     {"response_id": completion.id})


class AnthropicJudge:
    def __init__(self, judge: Judge, rubric: Rubric):
        import anthropic

        self.judge, self.rubric, self.errors = judge, rubric, (anthropic.APIError,)
        try:
            self.client = anthropic.Anthropic(max_retries=MAX_RETRIES, timeout=TIMEOUT_S)
        except anthropic.AnthropicError as e:
            raise UsageError(f"{rubric.file}: judge {judge.rater}: {e}") from None
        if self.client.api_key is None and self.client.auth_token is None:  # the SDK would only say so per request
            raise UsageError(f"{rubric.file}: judge {judge.rater}: no API key; set ANTHROPIC_API_KEY "
                             "(or ANTHROPIC_AUTH_TOKEN)")
        self.system = instruction(rubric)
        self.tool = {"name": "answer", "description": "Record your judgment.", "input_schema": answer_schema(rubric)}

    def ask(self, prompt: str) -> Reply:
        started = time.perf_counter()
        try:
            message = self.client.messages.create(
                model=self.judge.model, max_tokens=self.rubric.max_tokens, system=self.system,
                messages=[{"role": "user", "content": prompt}], tools=[self.tool],
                tool_choice={"type": "tool", "name": "answer"})
        except self.errors as e:
            raise CallFailed(self.judge, e) from e
        latency = time.perf_counter() - started
        usage = message.usage
        return Reply(_anthropic_text(message.content), message.model, usage.input_tokens, usage.output_tokens,
                     getattr(usage, "cache_read_input_tokens", None), message.stop_reason,
                     getattr(message, "_request_id", None), latency, {"response_id": message.id})


def _anthropic_text(blocks: list[Any]) -> str | None:
    """The forced tool's input as JSON text; the text blocks if the model answered in words instead."""
    for block in blocks:
        if getattr(block, "type", None) == "tool_use":
            return orjson.dumps(block.input).decode()
    texts = [block.text for block in blocks if getattr(block, "type", None) == "text"]
    return "".join(texts) if texts else None


def connect(judge: Judge, rubric: Rubric) -> OpenAIJudge | AnthropicJudge:
    """The judge's client (made before anything is asked: a missing key is an error up front)."""
    return {"openai": OpenAIJudge, "anthropic": AnthropicJudge}[judge.provider](judge, rubric)
