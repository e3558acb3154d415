"""``update_model``'s threshold resolution (the contract default)."""

from __future__ import annotations

import pytest

from ctxengine_host.contract.thresholds import resolve_model_threshold

from .test_validation import Good


def test_longest_substring_wins_and_provider_key_wins_ties():
    table = {"gpt-4": 0.5, "gpt-4o": 0.8, "openai:gpt-4o": 0.6}
    assert resolve_model_threshold("gpt-4o-mini", table) == 0.8
    assert resolve_model_threshold("gpt-4o-mini", table, provider="openai") == 0.6
    assert resolve_model_threshold("gpt-4o-mini", table, provider="azure") == 0.8
    assert resolve_model_threshold("gpt-4-turbo", table) == 0.5
    assert resolve_model_threshold("claude", table) is None


def test_update_model_sets_threshold_and_returns_to_configured_percent():
    engine = Good()
    engine.threshold_percent = 0.7
    engine.model_thresholds = {"gpt-4o": 0.8}
    engine.update_model("gpt-4o", 100_000)
    assert (engine.context_length, engine.threshold_tokens) == (100_000, 80_000)
    engine.update_model("other-model", 10_000)
    assert engine.threshold_percent == pytest.approx(0.7)
    assert engine.threshold_tokens == 7_000


def test_on_session_reset_and_status_defaults():
    engine = Good()
    engine.update_model("m", 1000)
    engine.last_prompt_tokens, engine.compression_count = 500, 2
    status = engine.get_status()
    assert status["usage_percent"] == 50.0 and status["compression_count"] == 2
    engine.on_session_reset()
    assert engine.get_status()["last_prompt_tokens"] == 0 and engine.compression_count == 0
