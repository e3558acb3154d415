"""Sub-agent sessions: isolated and fork, rollback on a failed spawn, end notifications."""

from __future__ import annotations

import pytest

from ctxengine_host.runtime.session import BudgetError

from .engines import RecordingEngine

USAGE = {"prompt_tokens": 10, "completion_tokens": 1}


class RollbackEngine(RecordingEngine):
    name = "rollback"

    def prepare_subagent_spawn(self, parent_session_id, child_session_id, context_mode, ttl_s):
        self._rec("prepare_subagent_spawn", (context_mode, ttl_s))
        return lambda: self._rec("rollback", child_session_id)


def parent_session(host):
    session = host.open_session("p", system_prompt="sys")
    session.add_user_message("plan")
    session.record_response({"role": "assistant", "content": "ok"}, USAGE)
    return session


def test_fork_copies_the_live_view_with_uids(make_host):
    host = make_host(RecordingEngine())
    parent = parent_session(host)
    child = parent.spawn_subagent("fork")
    assert child.session_id.startswith("p/sub-")
    assert child.messages() == parent.messages()
    assert [r.origin for r in host.store.rows(child.session_id)] == ["fork", "fork"]
    assert host.store.get_session(child.session_id).parent_session_id == "p"
    child.add_user_message("sub-task")
    assert len(parent.messages()) == 2


def test_isolated_starts_empty_and_ending_notifies_the_parent(make_host):
    engine = RecordingEngine()
    host = make_host(engine)
    parent = parent_session(host)
    child = parent.spawn_subagent("isolated", ttl_s=30)
    assert child.messages() == []
    child.end()
    assert ("on_subagent_ended", "completed") in engine.calls
    assert ("prepare_subagent_spawn", "isolated") in engine.calls


def test_failed_spawn_calls_the_rollback(make_host):
    engine = RollbackEngine()
    host = make_host(engine, context_length=400, reserve=100)
    parent = parent_session(host)
    with pytest.raises(BudgetError):
        parent.spawn_subagent("isolated", system_prompt="long " * 400)
    assert [m for m in engine.methods() if m == "rollback"] == ["rollback"]
    assert ("prepare_subagent_spawn", ("isolated", None)) in engine.calls


def test_ending_the_parent_ends_its_children(make_host):
    host = make_host(RecordingEngine())
    parent = parent_session(host)
    child = parent.spawn_subagent("isolated")
    parent.end()
    assert child.ended and parent.ended


def test_bad_mode_is_refused(make_host):
    parent = parent_session(make_host(RecordingEngine()))
    with pytest.raises(ValueError, match="'isolated' or 'fork'"):
        parent.spawn_subagent("clone")


@pytest.mark.parametrize("ttl", [float("nan"), float("-inf"), -5, "10"])
def test_a_ttl_without_meaning_is_refused_before_the_engine_hears_of_it(make_host, ttl):
    engine = RollbackEngine()
    parent = parent_session(make_host(engine))
    with pytest.raises(ValueError, match="ttl_s must be"):
        parent.spawn_subagent("isolated", ttl)
    assert "prepare_subagent_spawn" not in [name for name, _ in engine.calls]
    assert parent.spawn_subagent("isolated", 0).session_id.startswith("p/sub-")
