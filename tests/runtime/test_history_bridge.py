"""integrations.bridge: a framework's whole history each call, committed once, assembled."""

from __future__ import annotations

import json

import pytest

from ctxengine_host.integrations.bridge import HistoryBridge
from ctxengine_host.runtime.turns import BudgetError

from .engines import QuietEngine

SYSTEM = {"role": "system", "content": "You are terse."}


def call(call_id: str) -> dict:
    function = {"name": "read", "arguments": "{}"}
    return {"id": call_id, "type": "function", "function": function}


def test_each_message_is_stored_once_and_the_system_prompt_becomes_the_sessions(make_host):
    host = make_host("legacy")
    session = host.open_session("b")
    bridge = HistoryBridge(session)
    history = [SYSTEM, {"role": "user", "content": "hi"}]
    first = bridge.assemble(history)
    assert first == [SYSTEM, {"role": "user", "content": "hi"}]
    history += [
        {"role": "assistant", "content": None, "tool_calls": [call("c1")]},
        {"role": "tool", "tool_call_id": "c1", "content": "file text"},
    ]
    bridge.assemble(history)
    history += [{"role": "assistant", "content": "done"}, {"role": "user", "content": "next"}]
    bridge.assemble(history)
    rows = [r.message for r in host.store.rows("b")]
    assert [(m["role"], m.get("content")) for m in rows] == [
        ("user", "hi"),
        ("assistant", None),
        ("tool", "file text"),
        ("assistant", "done"),
        ("user", "next"),
    ]
    assert session.system_prompt == "You are terse."
    assert len(bridge.reports) == 1  # the new user message finished the first turn


def test_a_changed_history_is_stored_from_where_it_changed(make_host, caplog):
    host = make_host("legacy")
    bridge = HistoryBridge(host.open_session("c"))
    bridge.assemble([{"role": "user", "content": "one"}])
    bridge.assemble([{"role": "user", "content": "edited"}])
    assert [r.message["content"] for r in host.store.rows("c")] == ["one", "edited"]
    assert "changed at position 0" in caplog.text


class BrokenDefault(QuietEngine):
    """Stands for the default engine failing: the host raises EngineFailure."""

    name = "legacy"

    def should_compress_preflight(self, messages):
        raise RuntimeError("the default engine broke")


def test_a_failing_default_engine_falls_back_to_the_frameworks_history(make_host):
    host = make_host(BrokenDefault())
    bridge = HistoryBridge(host.open_session("f"))
    assert bridge.assemble([{"role": "user", "content": "keep me"}]) is None
    assert bridge.fallbacks == 1
    assert [r.message["content"] for r in host.store.rows("f")] == ["keep me"]  # stored first


def test_engine_tools_and_their_answers(make_host):
    host = make_host("lcm")
    bridge = HistoryBridge(host.open_session("t"))
    names = [t.name for t in bridge.engine_tools()]
    assert names == ["lcm_grep", "lcm_expand", "lcm_describe"]
    bridge.assemble([{"role": "user", "content": "the deploy key is rotated monthly"}])
    answer = json.loads(bridge.call_tool("lcm_grep", {"pattern": "deploy"}))
    assert answer["results"]
    assert "error" in json.loads(bridge.call_tool("lcm_grep", "not json"))


def test_set_system_prompt_recomputes_the_budget_and_refuses_one_that_leaves_none(make_host):
    host = make_host("legacy", context_length=1200, reserve=100)
    session = host.open_session("s")
    before = session.budget_tokens
    session.set_system_prompt("Be brief.")
    assert session.budget_tokens < before
    with pytest.raises(BudgetError):
        session.set_system_prompt("word " * 2000)
    assert session.system_prompt == "Be brief."
    session.add_user_message("hi")
    assert session.build_request().messages[0] == {"role": "system", "content": "Be brief."}


def test_a_message_the_store_refuses_is_counted_and_the_rest_is_stored(make_host, caplog):
    host = make_host("legacy")
    bridge = HistoryBridge(host.open_session("r"))
    broken = {"role": "assistant", "tool_calls": [{"function": {"name": "read"}}]}  # no id
    history = [{"role": "user", "content": "one"}, broken, {"role": "user", "content": "two"}]
    assert bridge.assemble(history) is not None
    assert bridge.rejected == 1 and "not stored" in caplog.text
    assert [r.message["content"] for r in host.store.rows("r")] == ["one", "two"]
