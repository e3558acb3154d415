"""``FrameworkEngineAdapter``: our engines driven the way a framework-style host drives them."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ctxengine_host.contract.models import AssembleResult, CompactResult
from ctxengine_host.discovery.compat import (
    FRAMEWORK_HOST_CAPABILITIES,
    FrameworkEngineAdapter,
    HostRequirementError,
)
from ctxengine_host.runtime.validity import sequence_problems
from ctxengine_host.testing import samples
from ctxengine_host.testing.context import kit_engine_context
from ctxengine_host.tokens import TokenCounter
from ctxengine_legacy.engine import LegacyEngine

from .broken_engines import GoodEngine


@pytest.fixture
def context(tmp_path):
    return kit_engine_context("kit", tmp_path / "data", TokenCounter("gpt-4"))


def framework_host_loop(adapter: Any, turns: int = 20) -> tuple[list[dict[str, Any]], int]:
    """What a framework-style agent loop does with its engine, turn after turn.

    Returns the final history and the largest request sent."""
    largest = 0
    counter = TokenCounter("gpt-4")
    adapter.update_model("gpt-4", 3000)
    adapter.on_session_start("fw-session")
    history: list[dict[str, Any]] = [{"role": "system", "content": "You help."}]
    for turn in range(turns):
        incoming = samples.user_message("fw", turn)
        history.append(incoming)
        request = adapter.select_context(
            list(history),
            conversation_messages=history[:-1],
            incoming_message=incoming,
            budget_tokens=2000,
        ) or list(history)
        assert not sequence_problems(request)
        tokens = counter.count_messages(request)
        largest = max(largest, tokens)
        adapter.update_from_response(
            {"prompt_tokens": tokens, "completion_tokens": 40, "total_tokens": tokens + 40}
        )
        history.extend(samples.turn_messages("fw", turn))
        adapter.on_turn_complete(list(history), usage=None)
        if adapter.should_compress():
            history = adapter.compress(history, current_tokens=tokens)
            assert isinstance(history, list) and not sequence_problems(history)
    adapter.on_session_end("fw-session", history)
    return history, largest


def test_a_compacting_engine_runs_under_a_framework_style_loop(context):
    adapter = FrameworkEngineAdapter(LegacyEngine(context=context))
    history, _ = framework_host_loop(adapter)
    assert adapter.compression_count >= 1
    assert TokenCounter("gpt-4").count_messages(history) < 3000
    assert adapter.get_status()["context_length"] == 3000


def test_a_selecting_engine_runs_under_a_framework_style_loop(context):
    adapter = FrameworkEngineAdapter(GoodEngine(context=context))
    _, largest = framework_host_loop(adapter)
    assert largest <= 2000  # every request was selected within budget_tokens
    assert adapter.compression_count == 0


def test_budget_attributes_are_read_and_written_through(context):
    engine = GoodEngine(context=context)
    adapter = FrameworkEngineAdapter(engine)
    adapter.model_thresholds = {"gpt-4": 0.5}
    adapter.update_model("gpt-4", 10_000)
    assert engine.threshold_tokens == adapter.threshold_tokens == 5000
    adapter.last_prompt_tokens = 7
    assert engine.last_prompt_tokens == 7


def test_tools_and_unknown_tools(context):
    adapter = FrameworkEngineAdapter(GoodEngine(context=context))
    assert [t["name"] for t in adapter.get_tool_schemas()] == ["kit_echo"]
    assert json.loads(adapter.handle_tool_call("kit_echo", {"text": "hi"})) == {"text": "hi"}
    assert "error" in json.loads(adapter.handle_tool_call("nope", {}))


class AssemblingEngine(GoodEngine):
    """Returns our richer results: an AssembleResult and a CompactResult without messages."""

    name = "kit-assembling"

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.ingested: list[dict[str, Any]] = []

    def ingest(self, session_id: str, messages: list[dict[str, Any]]) -> None:
        self.ingested.extend(messages)

    def select_context(self, request_messages, *, budget_tokens=0):
        head = [m for m in request_messages[:1] if m["role"] == "system"]
        left_out = [
            m["message_uid"] for m in request_messages[len(head) : -3] if "message_uid" in m
        ]
        return AssembleResult(
            messages=head + request_messages[-3:],
            system_prompt_addition="Recall with kit_echo.",
            covers=left_out,
        )

    def compress(self, messages, current_tokens=None, focus_topic=None):
        self.compression_count += 1
        return CompactResult(compacted=True, tokens_before=100, tokens_after=10)


def test_rich_results_are_folded_into_framework_shapes(context):
    engine = AssemblingEngine(context=context)
    adapter = FrameworkEngineAdapter(engine)
    history = samples.conversation(4, marker="rich")
    selected = adapter.select_context(history, budget_tokens=500)
    assert selected[0]["content"].startswith("Recall with kit_echo.\n\nYou are")
    assert selected[1:] == history[-3:]
    assert adapter.last_select_covers == []  # the sample messages have no uids
    stamped = [{**m, "message_uid": f"u{n}"} for n, m in enumerate(history)]
    adapter.select_context(stamped, budget_tokens=500)
    assert adapter.last_select_covers == [f"u{n}" for n in range(1, len(history) - 3)]
    without_system = adapter.select_context(history[1:], budget_tokens=500)
    assert without_system[0] == {"role": "system", "content": "Recall with kit_echo."}
    # The engine keeps the history itself: the framework host gets the engine's view, as
    # a history: without the system-prompt addition (the host's system prompt never grows).
    compacted = adapter.compress(history)
    assert compacted == [history[0], *history[-3:]]
    # A framework host has no ingest: the adapter feeds it the messages it has not seen,
    # without the host's system prompt, each with a uid.
    adapter.on_session_start("s1")
    adapter.on_turn_complete(history[:3])
    adapter.on_turn_complete(history[:5])
    assert [{k: v for k, v in m.items() if k != "message_uid"} for m in engine.ingested] == (
        history[1:5]
    )
    assert len({m["message_uid"] for m in engine.ingested}) == 4


class NeedsMaintenance(GoodEngine):
    name = "kit-needs-maintenance"
    host_requirements = {
        "agent-run": {"capabilities": ["maintain"], "message": "Run it under ctxengine."}
    }


def test_requirements_are_checked_against_the_framework_host(context):
    assert "maintain" not in FRAMEWORK_HOST_CAPABILITIES
    with pytest.raises(HostRequirementError, match=r"maintain.*Run it under ctxengine"):
        FrameworkEngineAdapter(NeedsMaintenance(context=context))
    adapter = FrameworkEngineAdapter(
        NeedsMaintenance(context=context), capabilities=FRAMEWORK_HOST_CAPABILITIES | {"maintain"}
    )
    assert adapter.name == "kit-needs-maintenance"


def test_clones_are_independent_adapters(context):
    adapter = FrameworkEngineAdapter(GoodEngine(context=context))
    adapter.update_model("gpt-4", 8000)
    clone = adapter.clone_for_agent()
    assert isinstance(clone, FrameworkEngineAdapter) and clone.engine is not adapter.engine
    clone.update_model("gpt-4", 1000)
    assert adapter.context_length == 8000


def test_a_framework_message_uid_no_store_keeps_is_replaced_by_the_views_own():
    """A framework's message may carry its own ``message_uid``; the view keeps it as the
    engine's key, but one no store keeps as given (3,000 characters: PostgreSQL's index
    refused the engine's write; a NUL) gets the uid the view gives a message without."""
    from ctxengine_host.discovery.compat.host_view import HostView

    view = HostView("s")
    history = [
        {"role": "user", "content": "kept", "message_uid": "fw-own-1"},
        {"role": "user", "content": "long", "message_uid": "u" * 3000},
        {"role": "user", "content": "nul", "message_uid": "a\x00b"},
    ]
    uids = [m["message_uid"] for m in view.take_new(history)]
    assert uids[0] == "fw-own-1"
    assert all(len(uid) <= 64 and "\x00" not in uid for uid in uids[1:])
    assert len(set(uids)) == 3
