"""Model price registry: USD per million tokens, used where a log records no cost.

Built-in list prices (standard tier, short context) for the papers' models whose public
prices we could confirm, with the date they were read. A model missing here gets a NULL
cost, never a made-up zero. Override or extend with a JSON file (`ingest --prices FILE`,
or $TRACEWH_HOME/prices.json):

    {"as_of": "2026-06-01",
     "models": {"my-model": {"input": 1.0, "output": 4.0, "cached_input": 0.1}}}
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import BadInputError
from ..paths import default_home


@dataclass(frozen=True)
class Price:
    input: float  # USD per 1M prompt tokens
    output: float  # USD per 1M completion tokens (reasoning included)
    cached_input: float | None = None  # USD per 1M cached prompt tokens; None = same as input
    as_of: str = ""

    def cost(self, prompt: int, completion: int, cached: int = 0) -> float:
        cached = min(cached or 0, prompt or 0)
        cached_rate = self.input if self.cached_input is None else self.cached_input
        return ((prompt - cached) * self.input + cached * cached_rate + completion * self.output) / 1e6


_AS_OF = "2026-06-21"
BUILT_IN: dict[str, Price] = {
    name: Price(i, o, c, _AS_OF)
    for name, (i, c, o) in {
        # OpenAI
        "gpt-4o": (2.50, 1.25, 10.00),
        "gpt-4.1": (2.00, 0.50, 8.00),
        "o1": (15.00, 7.50, 60.00),
        "o3": (2.00, 0.50, 8.00),
        "gpt-5": (1.25, 0.125, 10.00),
        "gpt-5-chat": (1.25, 0.125, 10.00),
        "gpt-5-mini": (0.25, 0.025, 2.00),
        "gpt-5-nano": (0.05, 0.005, 0.40),
        "gpt-5.1": (1.25, 0.125, 10.00),
        "gpt-5.2": (1.75, 0.175, 14.00),
        "gpt-5.4": (2.50, 0.25, 15.00),
        "gpt-5.5": (5.00, 0.50, 30.00),
        # Anthropic (cache reads); ids carry a date (claude-sonnet-4-20250514): see _SNAPSHOT_SUFFIX
        "claude-sonnet-4": (3.00, 0.30, 15.00),
        "claude-sonnet-4.5": (3.00, 0.30, 15.00),
        "claude-sonnet-4.6": (3.00, 0.30, 15.00),
        "claude-opus-4": (15.00, 1.50, 75.00),
        "claude-opus-4.1": (15.00, 1.50, 75.00),
        "claude-opus-4.5": (5.00, 0.50, 25.00),
        "claude-opus-4.6": (5.00, 0.50, 25.00),
        "claude-haiku-4.5": (1.00, 0.10, 5.00),
        # Google
        "gemini-3.1-pro": (2.00, 0.20, 12.00),
        "gemini-3-flash": (0.50, 0.05, 3.00),
        # xAI
        "grok-4": (3.00, 0.75, 15.00),
    }.items()
}

# A dated or preview snapshot of a registered model costs what the model costs.
_SNAPSHOT_SUFFIX = re.compile(r"^-(\d{4}-?\d{2}-?\d{2}|\d{4}|preview|latest)(-.*)?$")
# How gateways and clouds dress a model id, around the name the price list knows:
# 'openai/gpt-4o' (OpenRouter, LiteLLM, Inspect), 'openai:gpt-4o' (pydantic-ai),
# 'us.anthropic.claude-sonnet-4-20250514-v1:0' (Bedrock: region, vendor, version),
# 'claude-sonnet-4@20250514' (Vertex AI: the date after '@').
_PROVIDER_PREFIX = re.compile(r"^.*[/:]")
_BEDROCK_VENDOR = re.compile(r"^(?:[a-z]{2,4}\.)?(?:anthropic|amazon|meta|mistral|cohere|ai21|deepseek|openai|qwen)\.")
_BEDROCK_VERSION = re.compile(r"-v\d+(?::\d+)?$")


def _key(model: str) -> str:
    """'openai/GPT_5.4' -> 'gpt-5-4': provider prefix and cloud version, case, and . _ space @
    differences ignored, so a dated or prefixed id meets its base model's entry."""
    name = _BEDROCK_VERSION.sub("", model.strip().lower())
    name = _BEDROCK_VENDOR.sub("", _PROVIDER_PREFIX.sub("", name))
    return re.sub(r"[._@\s]+", "-", name)


class PriceRegistry:
    def __init__(self, prices: dict[str, Price] | None = None):
        self.prices = {_key(name): price for name, price in (prices or BUILT_IN).items()}
        self._found: dict[str, Price | None] = {}  # lookups by raw model string: capture calls this per request

    @classmethod
    def load(cls, path: Path | None = None) -> PriceRegistry:
        """Built-in prices, overridden by `path` (default: $TRACEWH_HOME/prices.json) when it exists."""
        registry = cls()
        path = path or default_home() / "prices.json"
        if path.exists():
            registry.prices.update({_key(k): v for k, v in _read_price_file(path).items()})
            registry._found.clear()
        return registry

    def lookup(self, model: str | None) -> Price | None:
        if not model:
            return None
        if model not in self._found:
            self._found[model] = self._match(_key(model))
        return self._found[model]

    def _match(self, key: str) -> Price | None:
        if key in self.prices:
            return self.prices[key]
        for name in sorted(self.prices, key=len, reverse=True):
            if key.startswith(name) and _SNAPSHOT_SUFFIX.match(key[len(name):]):
                return self.prices[name]
        return None

    def cost(self, model: str | None, prompt: int | None, completion: int | None, cached: int | None = 0) -> float | None:
        price = self.lookup(model)
        if price is None or prompt is None or completion is None:
            return None
        return round(price.cost(prompt, completion, cached or 0), 8)


def _read_price_file(path: Path) -> dict[str, Price]:
    try:
        data = json.loads(path.read_text())
        as_of = str(data.get("as_of", ""))
        return {name: Price(float(p["input"]), float(p["output"]),
                            None if p.get("cached_input") is None else float(p["cached_input"]), as_of)
                for name, p in data["models"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        raise BadInputError(str(path), f"not a price file ({type(e).__name__}: {e}); "
                            'expected {"as_of": ..., "models": {"name": {"input": .., "output": ..}}}') from None
