"""Boundaries, pruning helpers and the config model, each on its own."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from ctxengine_legacy import LegacyConfig, LegacyEngine
from ctxengine_legacy.boundaries import block_starts, plan_boundaries
from ctxengine_legacy.pruning import shorten_arguments
from ctxengine_legacy.summary_message import build_summary_message, summary_body

from .conftest import Conversation, long_session


def _plan(messages, tail_budget=300, tail_min_messages=2, protect_first_n=3):
    costs = [len(str(m.get("content") or "")) // 4 + 4 for m in messages]
    return plan_boundaries(
        messages,
        costs,
        protect_first_n=protect_first_n,
        tail_budget=tail_budget,
        tail_min_messages=tail_min_messages,
    )


def test_block_starts_keep_tool_results_with_their_call():
    messages = long_session(2)
    starts = block_starts(messages)
    assert all(messages[i]["role"] != "tool" for i in starts)
    assert starts == [0, 1, 2, 5, 6, 7, 10]


@pytest.mark.parametrize("budget", [0, 50, 300, 1000, 5000])
@pytest.mark.parametrize("protect", [0, 1, 3, 6])
def test_boundaries_fall_between_blocks_and_keep_roles_alternating(budget, protect):
    messages = long_session(12)
    plan = _plan(messages, tail_budget=budget, protect_first_n=protect)
    starts = set(block_starts(messages)) | {len(messages)}
    assert plan.head_end in starts and plan.tail_start in starts
    assert plan.head_end <= plan.tail_start
    if plan.tail_start > plan.head_end:
        assert messages[plan.head_end - 1]["role"] != "user"
        assert messages[plan.tail_start]["role"] == "assistant"
        last_user = max(i for i, m in enumerate(messages) if m["role"] == "user")
        assert plan.tail_start <= last_user or plan.restate_index == last_user


def test_a_history_that_fits_in_head_and_tail_has_no_middle():
    messages = Conversation().user("a").assistant("b").user("c").assistant("d").messages
    plan = _plan(messages)
    assert plan.tail_start == plan.head_end


@pytest.mark.parametrize(
    "arguments",
    [
        json.dumps({"path": "a.py", "patch": "x" * 5000}),
        json.dumps({"items": list(range(500)), "nested": {"text": "y" * 3000}}),
        "not json at all " * 200,
        json.dumps(["z" * 4000]),
    ],
)
def test_shortened_arguments_stay_valid_json_within_the_limit(arguments):
    short = shorten_arguments(arguments, 1000)
    assert len(short) <= 1000
    json.loads(short)


def test_short_arguments_are_untouched():
    assert shorten_arguments('{"path": "a.py"}', 1000) == '{"path": "a.py"}'


def test_summary_message_round_trip():
    message = build_summary_message(
        "## Facts\n- port 8443", uid=None, focus_topic="ports", latest_request="Do X."
    )
    assert summary_body(message) == "## Facts\n- port 8443"
    assert len(message["message_uid"]) == 32


def test_config_defaults_and_validation():
    config = LegacyConfig()
    assert config.threshold_percent == 0.75 and config.protect_first_n == 3
    assert config.tail_token_fraction == 0.20
    with pytest.raises(ValidationError, match="threshold_percent"):
        LegacyConfig(threshold_percent=1.5)
    with pytest.raises(ValidationError, match="protect_first"):
        LegacyConfig(protect_first=2)


def test_engine_info_and_configured_threshold():
    assert LegacyEngine.config_model is LegacyConfig
    engine = LegacyEngine(config={"threshold_percent": 0.5})
    engine.update_model("gpt-4", 10000)
    assert engine.name == "legacy" and engine.threshold_tokens == 5000
    assert engine.should_compress(5000) and not engine.should_compress(4999)
    engine.update_from_response({"prompt_tokens": 6000, "completion_tokens": 10})
    assert engine.should_compress()
    status = engine.get_status()
    assert status["last_prompt_tokens"] == 6000 and status["last_error"] is None


def test_select_context_ingest_and_turn_hooks_are_not_overridden():
    from ctxengine_host.contract.engine import ContextEngine

    for method in ("select_context", "ingest", "on_turn_complete"):
        assert getattr(LegacyEngine, method) is getattr(ContextEngine, method)


def test_an_engine_without_a_host_uses_its_own_services():
    engine = LegacyEngine()
    engine.update_model("gpt-4", 8192)
    result = engine.compress(long_session(12))
    assert result.compacted and result.tokens_after < engine.threshold_tokens
