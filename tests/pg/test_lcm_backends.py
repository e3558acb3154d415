"""The LCM engine and its store on both backends: the same driving, the same answers.

Every test takes ``lcm_database`` (a SQLite file, then a fresh PostgreSQL schema), and
the contract kit runs against the engine on PostgreSQL.
"""

from __future__ import annotations

import json
import sqlite3
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from ctxengine_host.config import SummarizerSection
from ctxengine_host.context import EngineContext
from ctxengine_host.summarizer import SummarizerService
from ctxengine_host.testing import ContextEngineContract
from ctxengine_host.tokens import TokenCounter
from ctxengine_lcm.engine import LcmEngine
from ctxengine_lcm.store import ContextItem, Grant, NewMessage, NewSummary

from .fixtures import fresh_schema_url, pg_connect
from .invariants import check_lcm_invariants

COUNTER = TokenCounter("gpt-4")
SUMMARIZER = SummarizerService(SummarizerSection(), COUNTER)


@pytest.fixture(params=["sqlite", "postgresql"])
def lcm_database(request, tmp_path) -> str:
    if request.param == "sqlite":
        return str(tmp_path / "lcm.db")
    return fresh_schema_url(request.getfixturevalue("pg_database"))


def context(data_dir: Path) -> EngineContext:
    return EngineContext(
        engine_name="lcm",
        data_dir=data_dir,
        count_tokens=COUNTER.count_any,
        summarize=SUMMARIZER.summarize,
    )


def make_engine(database: str, data_dir: Path, session: str = "s1") -> LcmEngine:
    config = {
        "database": database,
        "leaf_chunk_tokens": 1_500,
        "fresh_tail_messages": 8,
        "leaf_target_tokens": 120,
        "condensed_target_tokens": 150,
    }
    engine = LcmEngine(config=config, context=context(data_dir))
    engine.update_model("gpt-4", 8_000)
    engine.on_session_start(session)
    return engine


def exchange(n: int) -> list[dict[str, Any]]:
    filler = " ".join(f"w{n}x{i}" for i in range(60))
    return [
        {"role": "user", "content": f"question {n} about topic{n}: {filler}",
         "message_uid": uuid.uuid4().hex},
        {"role": "assistant", "content": f"answer {n}: fact{n} is value{n}",
         "message_uid": uuid.uuid4().hex},
    ]  # fmt: skip


def drive(engine: LcmEngine, turns: int) -> list[dict[str, Any]]:
    history: list[dict[str, Any]] = [{"role": "system", "content": "You are a coding agent."}]
    for n in range(turns):
        batch = exchange(n)
        history += batch
        engine.ingest("s1", batch)
        result = engine.select_context(history, budget_tokens=6_000)
        if engine.should_compress(result.estimated_tokens):
            engine.compress(history)
    return history


def invariants(database: str) -> dict[str, int]:
    if database.startswith("postgresql://"):
        with pg_connect(database) as conn:
            return check_lcm_invariants(conn)
    conn = sqlite3.connect(database)
    try:
        return check_lcm_invariants(conn, prefix="", mark="?")
    finally:
        conn.close()


def tool(engine: LcmEngine, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return json.loads(engine.handle_tool_call(name, args))


def test_driving_compacts_keeps_every_message_and_the_tools_agree(lcm_database, tmp_path):
    engine = make_engine(lcm_database, tmp_path)
    try:
        history = drive(engine, 40)
        totals = invariants(lcm_database)
        assert totals["messages"] == len(history) - 1 and totals["summaries"] > 0
        status = engine.get_status()
        assert status["integrity"] == "ok" and status["store_bytes"] > 0

        hit = tool(engine, "lcm_grep", {"pattern": "fact7 value7", "scope": "messages"})
        first = hit["results"][0]
        assert first["snippet"] == "answer 7: fact7 is value7"
        assert first["covered_by"].startswith("sum_")
        expanded = tool(engine, "lcm_expand", {"id": first["id"]})
        assert expanded["message"]["content"] == "answer 7: fact7 is value7"
        recent = tool(
            engine,
            "lcm_grep",
            {"pattern": "answer", "limit": 5, "scope": "messages", "sort": "recency"},
        )
        seqs = [r["seq"] for r in recent["results"]]
        assert len(seqs) == 5 and seqs == sorted(seqs, reverse=True)
        ranked = tool(engine, "lcm_grep", {"pattern": "fact3", "sort": "relevance"})
        assert any("fact3" in r["snippet"] for r in ranked["results"])
        summaries = tool(engine, "lcm_grep", {"pattern": "question", "scope": "summaries"})
        assert summaries["count"] > 0
        assert any(r["matching_messages"] for r in summaries["results"])
        regex = tool(engine, "lcm_grep", {"pattern": r"fact1\d is", "mode": "regex"})
        assert {r["snippet"] for r in regex["results"]} >= {"answer 12: fact12 is value12"}
        future = tool(engine, "lcm_grep", {"pattern": "answer", "since": time.time() + 3600})
        assert future["count"] == 0
        literal = tool(engine, "lcm_grep", {"pattern": 'fact5 OR "x" NEAR(', "scope": "messages"})
        assert "error" not in literal
    finally:
        engine.dispose()


def test_a_retried_ingest_stores_nothing_twice(lcm_database, tmp_path):
    engine = make_engine(lcm_database, tmp_path)
    try:
        batch = exchange(1)
        assert engine.ingest("s1", batch).count == 2
        assert engine.ingest("s1", batch).count == 0
        other = make_engine(lcm_database, tmp_path)  # another clone, as in another process
        assert other.ingest("s1", [*batch, *exchange(2)]).count == 2
        other.dispose()
        assert invariants(lcm_database)["messages"] == 4
    finally:
        engine.dispose()


def test_a_stale_compaction_step_and_a_late_one_write_nothing(lcm_database, tmp_path):
    engine = make_engine(lcm_database, tmp_path)
    try:
        drive(engine, 3)
        store = engine.store
        conv = store.current_conversation("s1")
        items = store.context_items(conv.id)[:2]
        draft = NewSummary("leaf", 0, "s", 1, 0.0, 1.0, 1, 2, 2, 0, 10, 0,
                           tuple(i.ref_id for i in items))  # fmt: skip
        stale = [ContextItem(i.ordinal, i.kind, i.ref_id + 1000, 1, -1, i.role) for i in items]
        assert store.replace_with_summary(conv.id, stale, draft) is None
        assert store.replace_with_summary(conv.id, items, draft, time.monotonic() - 1) is None
        assert store.context_items(conv.id)[:2] == items
        assert store.replace_with_summary(conv.id, items, draft) is not None
        assert invariants(lcm_database)["summaries"] == 1
    finally:
        engine.dispose()


def test_store_operations_agree(lcm_database, tmp_path):
    engine = make_engine(lcm_database, tmp_path)
    try:
        store = engine.store
        conv = store.current_conversation("s1")
        assert store.current_conversation("s1").id == conv.id
        message = NewMessage("u1", "user", "needle in text", "{}", None, None, 3, 3, False, 5.0)
        assert store.append_messages(conv.id, [message]) == 1
        found = store.message_by_uid([conv.id], "u1")
        assert found is not None and found.seq == 1 and found.content == "needle in text"
        assert store.known_uid(conv.id, "u1") and not store.known_uid(conv.id, "u2")
        hits = store.search_fulltext([conv.id], '"needle"', "messages", None, None, 5, False, 100)
        assert [h.id for h in hits] == [found.id]
        assert [h.id for h in store.scan_recent([conv.id], "messages", None, None, 10)] == [
            found.id
        ]
        newer = store.start_new_conversation("s1")
        assert newer.generation == conv.generation + 1
        assert store.session_conversation_ids("s1") == [newer.id, conv.id]
        grant_id = store.create_grant(Grant(0, "child", "s1", 1, 100, 0, None))
        store.charge_grant(grant_id, 7)
        (grant,) = store.active_grants("child", time.time())
        assert grant.tokens_used == 7 and grant.conversation_ids == [newer.id, conv.id]
        assert store.revoke_grants("child") == 1 and store.active_grants("child", 0) == []
        assert store.stats(conv.id)["stored_messages"] == 1
    finally:
        engine.dispose()


def test_the_store_opening_dispatches_on_the_url(pg_database, tmp_path):
    url = fresh_schema_url(pg_database)
    engine = make_engine(url, tmp_path)
    try:
        assert type(engine.store).__name__ == "PgLcmStore"
        assert engine.get_status()["store_path"].startswith("postgresql://")
    finally:
        engine.dispose()
    bad = LcmEngine(config={"database": "postgresql://127.0.0.1/db?nonsense=1"})
    with pytest.raises(ValueError, match="nonsense"):
        bad.store  # noqa: B018


class TestLcmContractOnPostgres(ContextEngineContract):
    @pytest.fixture
    def engine(self, engine_context, pg_database):
        engine = LcmEngine(
            config={"database": fresh_schema_url(pg_database)}, context=engine_context
        )
        yield engine
        engine.dispose()


def test_missed_messages_are_stored_in_their_history_position(lcm_database, tmp_path):
    engine = make_engine(lcm_database, tmp_path)
    try:
        store = engine.store
        conv = store.current_conversation("s1").id
        rows = [NewMessage(f"u{n}", "user", f"m{n}", "{}", None, None, 3, 3, False, n)
                for n in range(4)]  # fmt: skip
        store.append_messages(conv, rows)
        missed = [NewMessage("late", "assistant", "late", "{}", None, None, 2, 2, False, 9.0)]
        assert store.insert_messages_after(conv, "u1", missed) == 1
        assert store.insert_messages_after(conv, "u1", missed) == 0  # known uid: skipped
        items = store.context_items(conv)
        contents = [store.message(i.ref_id).content for i in items]
        assert contents == ["m0", "m1", "late", "m2", "m3"]
        assert [store.message(i.ref_id).seq for i in items] == [1, 2, 3, 4, 5]
        assert invariants(lcm_database)["messages"] == 5
    finally:
        engine.dispose()
