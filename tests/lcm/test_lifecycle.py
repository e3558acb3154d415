"""Lifecycle: resume, bootstrap, clones, sub-agent grants, status, deadlines, failures."""

from __future__ import annotations

import json
import threading
import time

import pytest
from conftest import FOCUS_TOPICS, check_invariants, drive, make_context, make_engine, turn

from ctxengine_host.contract.models import CompactResult
from ctxengine_host.stores.pg import is_postgres_url, parse_url
from ctxengine_lcm.config import LcmConfig, resolve_database_path
from ctxengine_lcm.engine import LcmEngine


def test_resume_after_restart(tmp_path, database):
    engine = make_engine(tmp_path, database=database)
    history = drive(engine, 50)
    before = engine.select_context(history, budget_tokens=6000)
    engine.dispose()
    reopened = make_engine(tmp_path, database=database)
    after = reopened.select_context(history, budget_tokens=6000)
    assert after.messages == before.messages
    # Ingesting the same messages again (a retried turn) stores nothing twice.
    assert reopened.ingest("s1", history[1:]).count == 0
    history += turn(900)
    assert reopened.ingest("s1", history[-8:]).count == 4  # a retry with new messages
    assert reopened.select_context(history, budget_tokens=6000).messages[-1] == history[-1]
    assert check_invariants(database)["messages"] == 204


def test_bootstrap_imports_history_idempotently(tmp_path, database):
    history = [m for n in range(30) for m in turn(n)]
    engine = make_engine(tmp_path, database=database)
    assert engine.bootstrap("s1", history, None).imported_messages == 120
    assert engine.bootstrap("s1", history, None).imported_messages == 0
    # Messages without uids get derived ones: the same history imports once too.
    bare = [{k: v for k, v in m.items() if k != "message_uid"} for m in history[:8]]
    assert engine.bootstrap("s2", bare, None).imported_messages == 8
    assert engine.bootstrap("s2", bare, None).imported_messages == 0
    engine.on_session_start("s1")
    result = engine.compress(history)
    assert result.compacted and result.messages is None
    check_invariants(database)


def test_compress_catches_up_on_messages_never_ingested(tmp_path, database):
    engine = make_engine(tmp_path, database=database)
    history = [{"role": "system", "content": "sys"}] + [m for n in range(10) for m in turn(n)]
    result = engine.select_context(history, conversation_messages=history[1:], budget_tokens=6000)
    assert result.messages[-1]["message_uid"] == history[-1]["message_uid"]


def test_clone_has_its_own_connection_and_budget(tmp_path, database):
    engine = make_engine(tmp_path, database=database)
    drive(engine, 10)
    clone = engine.clone_for_agent()
    assert clone.threshold_tokens == engine.threshold_tokens
    clone.update_model("gpt-4", 100_000)
    assert engine.context_length == 8_000
    clone.on_session_start("other")
    assert clone.store is not engine.store
    drive(clone, 5, session="other")
    assert json.loads(clone.handle_tool_call("lcm_grep", {"pattern": "fact3"}))["count"] == 1
    assert json.loads(clone.handle_tool_call("lcm_grep", {"pattern": "fact7"}))["count"] == 0
    clone.dispose()
    engine.dispose()


def test_subagent_grant_gives_capped_read_access_then_revokes(tmp_path, database):
    parent = make_engine(tmp_path, database=database, subagent_token_cap=600, subagent_max_depth=2)
    drive(parent, 30)
    child = parent.clone_for_agent()
    child.on_session_start("child-1")
    assert json.loads(child.handle_tool_call("lcm_grep", {"pattern": "fact5"}))["count"] == 0
    rollback = parent.prepare_subagent_spawn("s1", "child-1", "isolated", None)
    out = json.loads(child.handle_tool_call("lcm_grep", {"pattern": "fact5", "scope": "messages"}))
    assert out["count"] == 1 and out["results"][0]["session"] == "s1"
    # A grandchild sees the grandparent through the child's grant (depth 2).
    grandchild = parent.clone_for_agent()
    grandchild.on_session_start("grandchild")
    parent.prepare_subagent_spawn("child-1", "grandchild", "isolated", None)
    assert json.loads(grandchild.handle_tool_call("lcm_grep", {"pattern": "fact6"}))["count"] >= 1
    # The token cap runs out.
    for _ in range(20):
        last = json.loads(child.handle_tool_call("lcm_expand", {"id": out["results"][0]["id"]}))
    assert "cap reached" in last.get("error", "")
    rollback()
    assert json.loads(child.handle_tool_call("lcm_grep", {"pattern": "fact5"}))["count"] == 0
    parent.on_subagent_ended("grandchild", "done")
    assert json.loads(grandchild.handle_tool_call("lcm_grep", {"pattern": "fact6"}))["count"] == 0


def test_grant_expires_with_ttl(tmp_path, database):
    parent = make_engine(tmp_path, database=database)
    drive(parent, 5)
    child = parent.clone_for_agent()
    child.on_session_start("c")
    parent.prepare_subagent_spawn("s1", "c", "fork", 0.2)
    assert json.loads(child.handle_tool_call("lcm_grep", {"pattern": "fact1"}))["count"] == 1
    time.sleep(0.3)
    assert json.loads(child.handle_tool_call("lcm_grep", {"pattern": "fact1"}))["count"] == 0


@pytest.mark.parametrize("ttl", [float("nan"), float("inf"), -1.0, "60", True])
def test_a_grant_ttl_without_meaning_is_refused_on_every_backend(tmp_path, database, ttl):
    """NaN was kept as no expiry by SQLite and as never active by PostgreSQL: one grant,
    two meanings. Such a time to live is refused before any grant is written."""
    parent = make_engine(tmp_path, database=database)
    drive(parent, 2)
    with pytest.raises(ValueError, match="ttl_s must be"):
        parent.prepare_subagent_spawn("s1", "c", "fork", ttl)
    assert parent.store.active_grants(parent.session_key("c"), time.time()) == []


def test_status_reports_store_and_integrity(tmp_path, database):
    engine = make_engine(tmp_path, database=database)
    drive(engine, 20)
    status = engine.get_status()
    where = parse_url(database).label if is_postgres_url(database) else database
    assert status["store_path"] == where
    assert status["store_bytes"] > 0 and status["integrity"] == "ok"
    assert status["stored_messages"] == 80 and 0 <= status["usage_percent"] <= 100


def test_deadline_in_the_past_commits_nothing(tmp_path, database):
    engine = make_engine(tmp_path, database=database)
    history = drive(engine, 6)
    version = engine.store.conversation(engine._conversation()).context_version
    result = engine.compress(history, force=True, deadline=time.monotonic() - 1)
    assert not result.compacted
    assert engine.store.conversation(engine._conversation()).context_version == version


def test_deadline_reached_during_summarizing_commits_nothing(tmp_path, database):
    def slow(content, target_tokens, focus_topic=None, previous=None):
        time.sleep(0.3)
        from conftest import headline_summarize

        return headline_summarize(content, target_tokens)

    engine = LcmEngine(
        config={"database": database, "fresh_tail_messages": 4},
        context=make_context(tmp_path, slow),
    )
    engine.update_model("gpt-4", 8000)
    engine.on_session_start("s1")
    history = [m for n in range(20) for m in turn(n)]
    engine.ingest("s1", history)
    result = engine.compress(history, force=True, deadline=time.monotonic() + 0.1)
    assert not result.compacted and "deadline" in result.reason
    check_invariants(database)


def test_force_and_focus_topic_reach_the_summarizer(tmp_path, database):
    engine = make_engine(tmp_path, database=database)
    history = drive(engine, 8)
    FOCUS_TOPICS.clear()
    result = engine.compress(history, force=True, focus_topic="database migrations")
    assert isinstance(result, CompactResult) and result.compacted
    assert FOCUS_TOPICS and set(FOCUS_TOPICS) == {"database migrations"}


def test_summarizer_failure_ends_the_sweep_without_raising(tmp_path, database):
    def broken(*args, **kwargs):
        raise RuntimeError("insufficient_quota")

    engine = LcmEngine(config={"database": database}, context=make_context(tmp_path, broken))
    engine.update_model("gpt-4", 8000)
    engine.on_session_start("s1")
    history = [m for n in range(40) for m in turn(n)]
    engine.ingest("s1", history)
    result = engine.compress(history, force=True)
    assert result.ok is False and "insufficient_quota" in result.reason
    assert engine.select_context(history, budget_tokens=3000).estimated_tokens <= 3000


def test_oversized_summaries_are_cut_so_sweeps_converge(tmp_path, database):
    def verbose(content, target_tokens, focus_topic=None, previous=None):
        from ctxengine_host.contract.models import SummaryResult

        return SummaryResult(text="blah " * 5000, level=0)

    engine = LcmEngine(
        config={"database": database, "fresh_tail_messages": 4},
        context=make_context(tmp_path, verbose),
    )
    engine.update_model("gpt-4", 8000)
    engine.on_session_start("s1")
    history = [m for n in range(60) for m in turn(n)]
    engine.ingest("s1", history)
    for _ in range(5):
        engine.compress(history)
    assert engine.store.conversation(engine._conversation()).context_tokens < 6000


def test_threads_share_the_database(tmp_path, database):
    engine = make_engine(tmp_path, database=database)
    drive(engine, 5)
    errors: list[BaseException] = []

    def worker(k: int) -> None:
        try:
            clone = engine.clone_for_agent()
            drive(clone, 15, start=100 * k, session=f"t{k}")
            clone.dispose()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert check_invariants(database)["messages"] == 20 + 4 * 60


# SQLite only: where the file goes (a PostgreSQL URL is opened by ctxengine_lcm.backend,
# tests/pg/test_lcm_backends.py), and that constructing an engine creates no file.


def test_config_validation_and_database_location(tmp_path):
    with pytest.raises(ValueError, match="fresh_tail_messags"):
        LcmConfig.model_validate({"fresh_tail_messags": 3})
    assert resolve_database_path(None, tmp_path) == tmp_path / "lcm.db"
    assert resolve_database_path("sqlite:///x/y.db", tmp_path).as_posix() == "x/y.db"
    with pytest.raises(ValueError, match="postgresql"):
        resolve_database_path("postgresql://localhost/db", tmp_path)
    engine = LcmEngine(
        config={"database": str(tmp_path / "custom.db")}, context=make_context(tmp_path)
    )
    engine.on_session_start("s")
    assert (tmp_path / "custom.db").exists()
    engine.dispose()


def test_threshold_follows_model_thresholds(tmp_path):
    engine = LcmEngine(context=make_context(tmp_path))
    engine.model_thresholds = {"gpt-4o": 0.5}
    engine.update_model("gpt-4o-mini", 10_000)
    assert engine.threshold_tokens == 5_000
    assert not (tmp_path / "lcm.db").exists()  # nothing opened before first use
