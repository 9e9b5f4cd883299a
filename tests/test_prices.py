"""Costs where a log has none: built-in list prices, a user price file, NULL for unknown models."""

from __future__ import annotations

import json

import pytest
from helpers import tracewh, write_zip

import tracewh as tw
from tracewh.ingest.prices import PriceRegistry


def relay_line(model: str) -> dict:
    return {"sample_id": "json1", "sample_type": "json", "response_id": "6650c0ffee0000000000abcd",
            "model_name": model, "timestamp": "2026-04-14_18-01-31", "target_state_id": "edit_1",
            "initial_state_id": "basic_state", "evaluation": {}, "state_chain": ["edit_1"], "rid_chain": ["r-" + model],
            "round_trip_num": 1, "round_trip_direction": "forward", "num_retries": 1, "llm_latency": 1.0,
            "prompt_tokens": 2_000_000, "completion_tokens": 100_000, "reasoning_tokens": 0, "total_usd": 0.0}


@pytest.fixture
def archive(tmp_path):
    lines = "".join(json.dumps(relay_line(m)) + "\n" for m in ("gpt-5.4", "openai/GPT_5.4-2026-03-05", "my-model"))
    return write_zip(tmp_path / "r.zip", {"results_json_x.jsonl": lines.encode()})


def costs(wh) -> dict:
    return dict(tw.open(wh).sql("select run_id, cost_usd from llm_calls").fetchall())


def test_built_in_prices_and_unknown_models(tmp_path, archive):
    tracewh("ingest", archive, "-w", tmp_path / "wh", check=True)
    # 2M prompt tokens at $2.50/M + 100k completion tokens at $15/M
    assert costs(tmp_path / "wh") == {"r-gpt-5.4": 6.5, "r-openai/GPT_5.4-2026-03-05": 6.5, "r-my-model": None}


def test_a_price_file_overrides_and_extends(tmp_path, archive):
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"as_of": "2026-11-01", "models": {"my-model": {"input": 1.0, "output": 10.0},
                                                                     "gpt-5.4": {"input": 0.5, "output": 1.0}}}))
    tracewh("ingest", archive, "-w", tmp_path / "wh", "--prices", prices, check=True)
    assert costs(tmp_path / "wh") == {"r-gpt-5.4": 1.1, "r-openai/GPT_5.4-2026-03-05": 1.1, "r-my-model": 3.0}


def test_a_broken_price_file_is_a_clear_error(tmp_path, archive):
    prices = tmp_path / "prices.json"
    prices.write_text('{"models": {"x": {"input": "cheap"}}}')
    result = tracewh("ingest", archive, "-w", tmp_path / "wh", "--prices", prices)
    assert result.code == 2 and "prices.json" in result.err and "not a price file" in result.err


def test_cached_tokens_and_snapshots():
    registry = PriceRegistry()
    assert registry.cost("claude-sonnet-4-6", 1_000_000, 0, cached=1_000_000) == pytest.approx(0.30)
    assert registry.lookup("gpt-5.4-mini") is None  # a different model, not a snapshot of gpt-5.4
    assert registry.lookup("gemini-3-flash-preview") is registry.lookup("gemini-3-flash")


@pytest.mark.parametrize("model, base", [
    ("claude-sonnet-4-20250514", "claude-sonnet-4"),                       # a dated Anthropic id
    ("anthropic/claude-sonnet-4-20250514", "claude-sonnet-4"),             # OpenRouter, LiteLLM, Inspect
    ("openai/gpt-4o", "gpt-4o"),
    ("openai/gpt-4o-2024-08-06", "gpt-4o"),
    ("openai:gpt-4o", "gpt-4o"),                                           # pydantic-ai
    ("us.anthropic.claude-sonnet-4-5-20250929-v1:0", "claude-sonnet-4.5"),  # Bedrock: region, vendor, version
    ("claude-opus-4-1@20250805", "claude-opus-4.1"),                       # Vertex AI
])
def test_dated_and_provider_prefixed_ids_meet_their_base_model(model, base):
    registry = PriceRegistry()
    assert registry.lookup(base) is not None and registry.lookup(model) is registry.lookup(base)


@pytest.mark.parametrize("model", ["gpt-4o-mini", "openai/gpt-4o-mini-2024-07-18", "claude-3-5-sonnet-20241022",
                                   "anthropic/claude-sonnet-4-7"])
def test_a_different_model_behind_a_known_prefix_stays_unpriced(model):
    assert PriceRegistry().lookup(model) is None


def test_a_dated_id_is_priced_at_ingest(tmp_path):
    lines = json.dumps(relay_line("anthropic/claude-sonnet-4-20250514")) + "\n"
    tracewh("ingest", write_zip(tmp_path / "r.zip", {"results_json_x.jsonl": lines.encode()}), "-w", tmp_path / "wh",
            check=True)
    # 2M prompt tokens at $3/M + 100k completion tokens at $15/M
    assert costs(tmp_path / "wh") == {"r-anthropic/claude-sonnet-4-20250514": 7.5}
