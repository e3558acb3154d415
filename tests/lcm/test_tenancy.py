"""Whose history is it: LCM conversations are keyed by the transcript store they serve
(issue #13, item 1), and a message's identity is its uid and its content (item 6).

Each test runs with the LCM database on SQLite and on PostgreSQL; the applications'
transcript stores are SQLite files of their own (two applications on one machine).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from conftest import check_invariants, query

from ctxengine_host.config import CtxConfig, LoadedConfig
from ctxengine_host.runtime.host import ContextHost
from ctxengine_host.stores.transcript import SQLiteTranscriptStore


def lcm_host(tmp_path: Path, app: str, database: str, **lcm) -> ContextHost:
    """An application: its own transcript store and data dir, the given LCM database."""
    cfg = CtxConfig(engines={"lcm": {"database": database, **lcm}})
    cfg.context.reserve_output_tokens = 200
    return ContextHost(
        "lcm",
        store_path=tmp_path / f"{app}.db",
        data_dir=tmp_path / f"data-{app}",
        config=LoadedConfig(config=cfg),
        observers=[],
        model="gpt-4",
        context_length=8000,
    )


def exchange(session, text: str, answer: str = "noted") -> str:
    """One turn; returns the text of the request the provider got."""
    session.add_user_message(text)
    request = session.build_request()
    session.record_response({"role": "assistant", "content": answer}, None)
    session.finish_turn()
    return json.dumps(request.messages)


def test_two_applications_sharing_one_lcm_database_never_share_a_session(tmp_path, database):
    with lcm_host(tmp_path, "appA", database) as a, a.open_session("chat") as chat:
        exchange(chat, "my bank PIN is 4711, keep it secret")
    with lcm_host(tmp_path, "appB", database) as b, b.open_session("chat") as chat:
        sent = exchange(chat, "hello, what do you know about me?")
    assert "4711" not in sent
    # Each application's conversation holds its own messages only.
    keys = sorted(r[0] for r in query(database, "SELECT session_id FROM lcm_conversations"))
    assert len(keys) == 2 and all(k.endswith("#chat") for k in keys)
    check_invariants(database)


def test_app_a_resumes_its_own_history_after_app_b_used_the_same_session_id(tmp_path, database):
    with lcm_host(tmp_path, "appA", database) as a, a.open_session("chat") as chat:
        exchange(chat, "the launch code is ORANGE-42")
    with lcm_host(tmp_path, "appB", database) as b, b.open_session("chat") as chat:
        exchange(chat, "B's own words: BANANA-7")
    with lcm_host(tmp_path, "appA", database) as a, a.open_session("chat") as chat:
        sent = exchange(chat, "what was the code?")
    assert "ORANGE-42" in sent and "BANANA-7" not in sent


def test_an_explicit_namespace_names_the_owner(tmp_path, database):
    host = lcm_host(tmp_path, "appA", database, namespace="team-a")
    with host, host.open_session("chat") as chat:
        exchange(chat, "alpha secret 1234")
    keys = [r[0] for r in query(database, "SELECT session_id FROM lcm_conversations")]
    assert keys == ["team-a#chat"]


def test_a_conversation_the_transcript_does_not_hold_is_never_merged(tmp_path, database, caplog):
    """The same store id (a transcript store restored from an older copy): the LCM
    conversation has messages the transcript lacks, so it is not this live view's history."""
    with lcm_host(tmp_path, "appA", database) as a, a.open_session("chat") as chat:
        exchange(chat, "first words")
    backup = (tmp_path / "appA.db").read_bytes()
    with lcm_host(tmp_path, "appA", database) as a, a.open_session("chat") as chat:
        exchange(chat, "later words with ZEBRA-99")
    (tmp_path / "appA.db").write_bytes(backup)  # the restored copy lacks the later turn
    for suffix in ("-wal", "-shm"):
        (tmp_path / f"appA.db{suffix}").unlink(missing_ok=True)
    caplog.set_level(logging.WARNING, "ctxengine.engine.lcm")
    with lcm_host(tmp_path, "appA", database) as a, a.open_session("chat") as chat:
        sent = exchange(chat, "what did I say?")
    assert "ZEBRA-99" not in sent
    assert "not this transcript's history" in caplog.text
    generations = query(database, "SELECT generation FROM lcm_conversations ORDER BY 1")
    assert [g for (g,) in generations] == [0, 1]  # the old one stays stored


def test_the_store_id_is_persisted_not_derived_from_the_path(tmp_path):
    first = SQLiteTranscriptStore(tmp_path / "t.db")
    store_id = first.store_id
    first.close()
    (tmp_path / "t.db").rename(tmp_path / "moved.db")
    moved = SQLiteTranscriptStore(tmp_path / "moved.db")
    other = SQLiteTranscriptStore(tmp_path / "other.db")
    try:
        assert moved.store_id == store_id and len(store_id) == 32
        assert other.store_id != store_id
    finally:
        moved.close()
        other.close()


# ----------------------------------------------------------- item 6: message versions


def test_a_new_version_under_a_known_uid_reaches_the_model(tmp_path, database):
    with lcm_host(tmp_path, "appA", database) as host, host.open_session("s") as session:
        session.add_messages([{"role": "user", "content": "draft one", "message_uid": "u-1"}])
        session.build_request()
        session.record_response({"role": "assistant", "content": "ok"}, None)
        session.add_messages([{"role": "user", "content": "EDITED second", "message_uid": "u-1"}])
        sent = json.dumps(session.build_request().messages)
    assert "EDITED second" in sent and "draft one" in sent
    rows = query(database, "SELECT message_uid, content FROM lcm_messages ORDER BY seq")
    assert [r for r in rows if r[0] == "u-1"] == [("u-1", "draft one"), ("u-1", "EDITED second")]
    check_invariants(database)


def test_a_retried_identical_message_is_stored_once(tmp_path, database):
    with lcm_host(tmp_path, "appA", database) as host, host.open_session("s") as session:
        message = {"role": "user", "content": "same words", "message_uid": "u-2"}
        session.add_messages([message])
        session.build_request()
        session.guard.engine.ingest("s", [dict(message)])  # a retried ingest
        session.build_request()
    assert query(database, "SELECT COUNT(*) FROM lcm_messages") == [(1,)]


def test_digests_agree_with_the_transcript(tmp_path, database):
    with lcm_host(tmp_path, "appA", database) as host, host.open_session("s") as session:
        exchange(session, "a message with a digest", "and its answer")
        transcript = {r.message["message_uid"]: r.digest for r in host.store.rows("s")}
    stored = dict(query(database, "SELECT message_uid, digest FROM lcm_messages"))
    assert stored == transcript


def exported_archive(tmp_path: Path) -> dict:
    """The LCM archive of session "s" after one exchange ("archived words") through a host."""
    from ctxengine_lcm.archive import LcmArchiver

    source = LcmArchiver({"database": str(tmp_path / "a.db")}, tmp_path)
    with lcm_host(tmp_path, "appA", str(tmp_path / "a.db")) as host:
        with host.open_session("s") as session:
            exchange(session, "archived words")
        store_id = host.store.store_id
    data = source.export_session("s", store_id)
    source.close()
    return data


@pytest.mark.parametrize("old_field", ["missing", "empty"])
def test_an_archive_without_digests_imports_with_them(tmp_path, old_field):
    from ctxengine_lcm.archive import LcmArchiver

    data = exported_archive(tmp_path)
    for conversation in data["conversations"]:
        for message in conversation["messages"]:
            if old_field == "missing":
                del message["digest"]
            else:
                message["digest"] = ""
    target = LcmArchiver({"database": str(tmp_path / "b.db")}, tmp_path)
    assert target.import_session("s", data, "target-store")
    target.close()
    digests = query(str(tmp_path / "b.db"), "SELECT session_id, digest FROM lcm_messages m "
                    "JOIN lcm_conversations c ON c.id = m.conversation_id")  # fmt: skip
    assert {d[0] for d in digests} == {"store:target-store#s"}
    assert all(len(d[1]) == 32 for d in digests)


def test_a_missed_new_version_is_caught_up_from_the_live_view(tmp_path, database):
    from conftest import make_engine

    engine = make_engine(tmp_path, database=database, session="s")
    first = {"role": "user", "content": "first words", "message_uid": "u-3"}
    engine.ingest("s", [first])
    edited = {"role": "user", "content": "second version", "message_uid": "u-3"}
    live = [first, {"role": "assistant", "content": "ok", "message_uid": "u-4"}, edited]
    result = engine.select_context(live, conversation_messages=live, budget_tokens=4000)
    engine.dispose()
    assert "second version" in json.dumps(result.messages)
    rows = query(database, "SELECT message_uid, content FROM lcm_messages ORDER BY seq")
    assert rows == [("u-3", "first words"), ("u-4", "ok"), ("u-3", "second version")]
