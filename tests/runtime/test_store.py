"""The transcript store: uids, tool-call uid pairing, resume after restart, nothing deleted."""

from __future__ import annotations

import re
import sqlite3

import pytest
from pg.fixtures import fresh_schema_url, pg_database  # noqa: F401  (fixture)

from ctxengine_host.stores.pg import close_pools
from ctxengine_host.stores.transcript import (
    SQLiteTranscriptStore,
    ToolCallPairing,
    stamp_identities,
)

from .driver import drive, tool_call
from .engines import QuietEngine, RecordingEngine, SummarizingEngine

UID = re.compile(r"^[0-9a-f]{32}$")
USAGE = {"prompt_tokens": 10, "completion_tokens": 1}


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def store_path(request, tmp_path):
    """Every store test runs on both backends (a file, or a fresh PostgreSQL schema)."""
    if request.param == "sqlite":
        yield tmp_path / "transcripts.db"
        return
    yield fresh_schema_url(request.getfixturevalue("pg_database"))
    close_pools()


def test_uids_are_minted_at_first_store_and_tool_calls_paired(make_host):
    session = make_host(QuietEngine()).open_session("s")
    session.add_user_message("go")
    calls = [tool_call("call_a", "a"), tool_call("call_a", "a"), tool_call("call_b", "b")]
    session.record_response({"role": "assistant", "content": None, "tool_calls": calls}, USAGE)
    session.record_tool_results(
        [
            {"role": "tool", "tool_call_id": "call_a", "content": "A1"},
            {"role": "tool", "tool_call_id": "call_a", "content": "A2"},
            {"role": "tool", "tool_call_id": "call_b", "content": "B"},
        ]
    )
    user, assistant, r1, r2, r3 = session.messages()
    assert all(UID.match(m["message_uid"]) for m in (user, assistant, r1, r2, r3))
    uids = assistant["_tool_call_uids"]
    assert set(uids) == {"call_a", "call_b"} and uids["call_a"] != uids["call_b"]
    assert r1["_tool_call_uid"] == r2["_tool_call_uid"] == uids["call_a"]
    assert r3["_tool_call_uid"] == uids["call_b"]
    assert [c["id"] for c in assistant["tool_calls"]] == ["call_a", "call_a", "call_b"]


def test_per_occurrence_uid_lists_pair_in_order():
    pairing = ToolCallPairing()
    folded = {
        "role": "assistant",
        "tool_calls": [{"id": "c"}, {"id": "c"}],
        "_tool_call_uids": {"c": ["1" * 32, "2" * 32]},
        "message_uid": "9" * 32,
    }
    results = [{"role": "tool", "tool_call_id": "c", "content": str(i)} for i in range(2)]
    stamped = stamp_identities([folded, *results], pairing)
    assert [m["_tool_call_uid"] for m in stamped[1:]] == ["1" * 32, "2" * 32]
    assert stamped[0]["message_uid"] == "9" * 32


def test_restart_and_resume_keeps_uids_live_view_and_turns(make_host, store_path):
    host = make_host(SummarizingEngine())
    session = host.open_session("s", system_prompt="sys", tools=[])
    for text in ("one", "two", "three"):
        session.add_user_message(text)
        session.build_request()
        session.record_response({"role": "assistant", "content": text.upper()}, USAGE)
        session.finish_turn()
    session.compact()
    live = session.messages()
    rows = host.store.rows("s")
    host.close()

    engine = RecordingEngine()
    host2 = make_host(engine)
    resumed = host2.open_session("s")
    assert resumed.messages() == live
    assert resumed.turn_index == 3
    assert resumed.system_prompt == "sys"
    assert host2.store.rows("s") == rows
    resumed.add_user_message("four")
    request = resumed.build_request()
    assert request.messages[0] == {"role": "system", "content": "sys"}
    assert [m["content"] for m in request.messages[-2:]] == ["THREE", "four"]
    assert [d for m, d in engine.calls if m == "bootstrap"] == [len(live)]


def test_tool_result_in_a_later_batch_pairs_after_restart(make_host):
    host = make_host(QuietEngine())
    session = host.open_session("s")
    session.add_user_message("go")
    session.record_response(
        {"role": "assistant", "content": None, "tool_calls": [tool_call("c1", "x")]}, USAGE
    )
    call_uid = session.messages()[1]["_tool_call_uids"]["c1"]
    host.close()
    resumed = make_host(QuietEngine()).open_session("s")
    resumed.record_tool_results([{"role": "tool", "tool_call_id": "c1", "content": "ok"}])
    assert resumed.messages()[-1]["_tool_call_uid"] == call_uid


def test_store_schema_is_wal_with_the_documented_tables(make_host, store_path):
    if str(store_path).startswith("postgresql://"):
        pytest.skip("SQLite file layout (tests/pg/test_transcripts.py checks the PG tables)")
    drive(make_host(RecordingEngine()))
    db = sqlite3.connect(store_path)
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    names = {r[0] for r in db.execute("SELECT name FROM sqlite_master")}
    assert {"sessions", "messages", "live", "bootstraps", "live_messages"} <= names
    uids = [r[0] for r in db.execute("SELECT message_uid FROM messages")]
    assert uids and all(UID.match(u) for u in uids)
    leaked = db.execute("SELECT COUNT(*) FROM messages WHERE body LIKE '%message_uid%'")
    assert leaked.fetchone()[0] == 0


def test_a_newer_schema_is_refused_with_a_clear_error(tmp_path):
    path = tmp_path / "t.db"
    SQLiteTranscriptStore(path).close()
    db = sqlite3.connect(path)
    db.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    db.commit()
    db.close()
    try:
        SQLiteTranscriptStore(path)
    except RuntimeError as exc:
        assert "schema version 99" in str(exc) and "upgrade" in str(exc)
    else:
        raise AssertionError("a newer schema was accepted")


def test_default_store_path_is_under_the_data_dir(tmp_path, monkeypatch):
    from ctxengine_host.runtime.host import ContextHost

    monkeypatch.setenv("CTXENGINE_DATA_DIR", str(tmp_path / "data"))
    with ContextHost(QuietEngine(), observers=[]) as host:
        assert host.store.location == str(tmp_path / "data" / "transcripts.db")


def test_both_sqlite_stores_checkpoint_their_wal_every_40_mb(tmp_path):
    """Every append commits: SQLite's default checkpoint (1,000 pages) would copy the same
    index pages back every few hundred commits; both stores wait for ~40 MB of WAL."""
    from ctxengine_host.stores.sqlite_schema import WAL_CHECKPOINT_BYTES
    from ctxengine_lcm.sqlite_store import SqliteStore

    transcripts = SQLiteTranscriptStore(tmp_path / "transcripts.db")
    lcm = SqliteStore(tmp_path / "lcm.db")
    try:
        for db in (transcripts._db, lcm._conn):
            (pages,) = db.execute("PRAGMA wal_autocheckpoint").fetchone()
            (page_bytes,) = db.execute("PRAGMA page_size").fetchone()
            assert pages == WAL_CHECKPOINT_BYTES // page_bytes > 1_000
    finally:
        transcripts.close()
        lcm.close()
