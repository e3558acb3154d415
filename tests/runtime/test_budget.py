"""Budgets and the overflow precheck per owns_compaction and prompt_authority."""

from __future__ import annotations

import pytest

from ctxengine_host.contract.messages import strip_persistence_fields
from ctxengine_host.contract.models import AssembleResult
from ctxengine_host.runtime.session import MIN_BUDGET_TOKENS, BudgetError

from .engines import OwnsCompactionEngine, QuietEngine, RecordingEngine

USAGE = {"prompt_tokens": 10, "completion_tokens": 1}
LONG = "lorem ipsum dolor sit amet " * 40  # about 240 tokens


def fill(session, turns):
    for i in range(turns):
        session.add_user_message(f"{i} {LONG}")
        session.record_response({"role": "assistant", "content": f"ok {i}"}, USAGE)


def test_budget_is_window_minus_reserve_system_and_tools(make_host):
    host = make_host(QuietEngine(), context_length=4000, reserve=500)
    tools = [{"type": "function", "function": {"name": "f", "parameters": {}}}]
    session = host.open_session("s", system_prompt="Be kind.", tools=tools)
    counter = host.counter
    expected = (
        4000
        - 500
        - counter.count_message({"role": "system", "content": "Be kind."})
        - counter.count_tool_schema(tools[0])
    )
    assert session.budget_tokens == expected
    session.add_user_message("hi")
    request = session.build_request()
    assert request.budget_tokens == expected
    assert request.estimated_tokens == counter.count_messages(request.messages) + (
        counter.count_tool_schema(tools[0])
    )
    assert request.tools == tools


def test_over_budget_engine_is_asked_first_then_the_request_is_substituted(make_host):
    engine = RecordingEngine()  # compress echoes: compacts nothing
    host = make_host(engine, context_length=1500, reserve=100)
    session = host.open_session("s", system_prompt="sys")
    fill(session, 8)
    session.add_user_message("final question")
    request = session.build_request()
    assert ("compress", {"n": 17, "force": True, "focus": None}) in engine.calls
    assert request.substituted and not request.over_budget
    assert request.conversation_tokens <= request.budget_tokens
    assert request.messages[0] == {"role": "system", "content": "sys"}
    assert request.messages[-1] == {"role": "user", "content": "final question"}
    assert len(session.messages()) == 17  # request-only: the live view is untouched


def test_owns_compaction_is_never_substituted(make_host):
    host = make_host(OwnsCompactionEngine(), context_length=1500, reserve=100)
    session = host.open_session("s")
    fill(session, 8)
    session.add_user_message("final")
    request = session.build_request()
    assert request.over_budget and not request.substituted
    assert len(request.messages) == 17


def test_preassembly_may_overflow_counts_the_full_history(make_host):
    engine = RecordingEngine()
    engine.select_result = lambda request, conversation: AssembleResult(
        messages=conversation[-1:], prompt_authority="preassembly_may_overflow"
    )
    host = make_host(engine, context_length=1500, reserve=100)
    session = host.open_session("s")
    fill(session, 8)
    session.add_user_message("final")
    request = session.build_request()
    assert request.selected and request.substituted and not request.over_budget
    assert ("compress", {"n": 17, "force": True, "focus": None}) in engine.calls


def test_assembled_authority_trusts_the_selection(make_host):
    engine = RecordingEngine()
    engine.select_result = lambda request, conversation: AssembleResult(messages=conversation[-1:])
    host = make_host(engine, context_length=1500, reserve=100)
    session = host.open_session("s")
    fill(session, 8)
    session.add_user_message("final")
    request = session.build_request()
    assert request.selected and not request.over_budget
    assert not any(m == "compress" for m in engine.methods())


def test_handle_context_overflow_forces_compaction_and_reselects(make_host):
    engine = RecordingEngine()
    engine.compress_result = lambda messages: messages[-1:]
    session = make_host(engine).open_session("s")
    fill(session, 3)
    session.add_user_message("last")
    request = session.handle_context_overflow(RuntimeError("context_length_exceeded"))
    assert [e.reason for e in request.compactions] == ["overflow"]
    assert request.compacted and request.messages == [{"role": "user", "content": "last"}]
    assert engine.methods()[-2:] == ["should_compress_preflight", "select_context"]


def test_substitution_uses_the_default_engine_within_the_budget(make_host):
    engine = RecordingEngine()
    host = make_host(engine, context_length=3000, reserve=100)
    session = host.open_session("s", system_prompt="sys")
    fill(session, 14)
    session.add_user_message("final question")
    live = [strip_persistence_fields(m) for m in session.messages()]
    request = session.build_request()
    assert request.substituted and not request.over_budget
    assert request.conversation_tokens <= request.budget_tokens
    body = request.messages[1:]
    assert body[-1] == {"role": "user", "content": "final question"}
    assert any(m not in live for m in body)  # the default engine's summary, not just a cut
    assert [strip_persistence_fields(m) for m in session.messages()] == live


def test_assembled_precheck_uses_the_engines_estimate(make_host):
    engine = RecordingEngine()
    engine.select_result = lambda request, conversation: AssembleResult(
        messages=conversation[-1:], estimated_tokens=999_999
    )
    host = make_host(engine, context_length=1500, reserve=100)
    session = host.open_session("s")
    session.add_user_message("short")
    request = session.build_request()
    # the engine's figure (not the host's count of ~7) made it over: compress, then substitute
    assert ("compress", {"n": 1, "force": True, "focus": None}) in engine.calls
    assert request.substituted and not request.over_budget
    assert request.messages == [{"role": "user", "content": "short"}]


# -- budgets that cannot work are refused, for every engine (#14 item 6)


class NeedsRoom(QuietEngine):
    name = "needs-room"
    min_budget_tokens = 2000


def test_a_budget_under_the_engines_floor_is_refused_with_the_numbers(make_host):
    host = make_host(NeedsRoom(), context_length=2200, reserve=256)
    with pytest.raises(BudgetError) as caught:
        host.open_session("s", system_prompt="Be kind.")
    message = str(caught.value)
    assert "context length 2200 - reserve_output_tokens 256" in message
    assert "engine 'needs-room' needs at least 2000" in message
    assert "raise the context length by" in message


@pytest.mark.parametrize("engine", ["legacy", "lcm"])
def test_the_shipped_engines_refuse_a_budget_they_cannot_work_in(make_host, engine, tmp_path):
    """The #14 case: legacy ran with a conversation budget of a few tokens."""
    window = 4096 + 400  # the default output reserve leaves ~400 tokens
    host = make_host(engine, context_length=window, reserve=4096, data_dir=tmp_path)
    with pytest.raises(BudgetError, match=f"engine '{engine}' needs at least"):
        host.open_session("s", system_prompt="You are a coding agent.")


def test_an_engine_that_declares_nothing_gets_the_hosts_floor(make_host):
    host = make_host(QuietEngine(), context_length=300, reserve=300 - MIN_BUDGET_TOKENS + 1)
    with pytest.raises(BudgetError, match=f"needs at least {MIN_BUDGET_TOKENS}"):
        host.open_session("s")
