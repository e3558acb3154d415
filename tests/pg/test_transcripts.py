"""The PostgreSQL transcript store: leases and fencing across processes, idempotent
retries, a server that goes away mid-write, schemas that are behind, shared quarantine."""

from __future__ import annotations

import secrets
import threading
import uuid

import pytest
from runtime.engines import QuietEngine

from ctxengine_host.runtime.host import ContextHost
from ctxengine_host.runtime.validity import ValidityError
from ctxengine_host.stores import pg
from ctxengine_host.stores.backends import open_store
from ctxengine_host.stores.pg_quarantine import PgQuarantineLog
from ctxengine_host.stores.pg_transcript import (
    TRANSCRIPT_SCHEMA,
    PostgresTranscriptStore,
    SessionTakenOver,
)
from ctxengine_host.stores.transcript import ToolCallPairing, stamp_identities
from ctxengine_host.tokens import message_digest

from .fixtures import fresh_schema_url, pg_connect

USAGE = {"prompt_tokens": 10, "completion_tokens": 1}


def stamped(*texts: str) -> list[tuple[dict, str, str]]:
    messages = stamp_identities([{"role": "user", "content": t} for t in texts], ToolCallPairing())
    return [(m, message_digest(m), "input") for m in messages]


def kill_on(conn, table: str, column: str, marker: str) -> None:
    """A trigger that makes the server terminate the writing backend mid-transaction."""
    conn.execute(
        "CREATE FUNCTION die() RETURNS trigger LANGUAGE plpgsql AS "
        "$$ BEGIN PERFORM pg_terminate_backend(pg_backend_pid()); RETURN NEW; END $$"
    )
    conn.execute(
        f"CREATE TRIGGER die AFTER INSERT ON {table} FOR EACH ROW "
        f"WHEN (NEW.{column} LIKE '%{marker}%') EXECUTE FUNCTION die()"
    )
    conn.commit()


def test_open_store_dispatches_on_the_url(pg_url):
    store = open_store(pg_url)
    try:
        assert isinstance(store, PostgresTranscriptStore)
        assert store.location.startswith("postgresql://127.0.0.1:5432/")
        assert "postgres@" not in store.location
    finally:
        store.close()


def test_a_session_is_leased_by_one_store_at_a_time(pg_url):
    first = PostgresTranscriptStore(pg_url)
    second = PostgresTranscriptStore(pg_url, lease_timeout=0.3)
    try:
        first.open_session("s")
        with pytest.raises(TimeoutError, match="open in another process"):
            second.open_session("s")
        first.update_session("s", ended=True)
        assert not second.open_session("s").created
    finally:
        first.close()
        second.close()


def test_a_store_that_lost_its_lease_cannot_write(pg_url):
    stale = PostgresTranscriptStore(pg_url)
    fresh = PostgresTranscriptStore(pg_url, lease_timeout=5)
    try:
        stale.open_session("s")
        stale.append_live("s", stamped("one"), 0)
        with pg_connect(pg_url, autocommit=True) as admin:  # its lease connection dies
            pid = stale._lease_conn.info.backend_pid
            admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        fresh.open_session("s")
        fresh.append_live("s", stamped("two"), 1)
        with pytest.raises(SessionTakenOver, match="resumed by another process"):
            stale.append_live("s", stamped("late"), 1)
        assert [r.message["content"] for r in fresh.live("s")] == ["one", "two"]
    finally:
        stale.close()
        fresh.close()


def test_a_retried_append_is_a_no_op(pg_url):
    store = PostgresTranscriptStore(pg_url)
    try:
        store.open_session("s")
        rows = stamped("a", "b")
        first = store.append_live("s", rows, 0)
        again = store.append_live("s", rows, 0)
        assert again == first
        assert store.count_rows("s") == 2 and len(store.live("s")) == 2
    finally:
        store.close()


def test_server_gone_mid_write_gives_a_clear_error_and_writes_nothing(pg_url, tmp_path):
    with pg_connect(pg_url) as conn:
        kill_on(conn, "transcript_messages", "body", "KILL-ME")
    host = ContextHost("legacy", model="gpt-4", context_length=8192, store_path=pg_url,
                       observers=[])  # fmt: skip
    try:
        session = host.open_session("s")
        session.add_user_message("hello")
        session.build_request()
        session.record_response({"role": "assistant", "content": "hi"}, USAGE)
        session.finish_turn()
        with pytest.raises(pg.PgUnavailable, match="nothing of this operation was committed"):
            session.add_messages(
                [{"role": "user", "content": "first"}, {"role": "user", "content": "KILL-ME"}]
            )
        assert host.store.count_rows("s") == 2
        with pg_connect(pg_url, autocommit=True) as conn:
            conn.execute("DROP TRIGGER die ON transcript_messages")
        session.add_user_message("after the outage")  # the pool replaced the connection
        assert [m["content"] for m in session.messages()] == ["hello", "hi", "after the outage"]
        assert host.store.count_rows("s") == 3
    finally:
        host.close()


def test_an_unmigrated_database_is_refused_at_start(pg_database):
    url = fresh_schema_url(pg_database, migrate=False)
    with pytest.raises(pg.SchemaBehindError, match="Run: ctxengine migrate"):
        ContextHost("legacy", model="gpt-4", store_path=url, observers=[])


def test_a_schema_one_version_behind_is_named_and_migrate_fixes_it(pg_url):
    target = pg.parse_url(pg_url)
    newer = pg.Schema(
        "transcripts",
        (*TRANSCRIPT_SCHEMA.steps, "ALTER TABLE transcript_sessions ADD COLUMN note TEXT"),
    )
    with (
        pg.connect(target) as conn,
        pytest.raises(pg.SchemaBehindError, match=rf"version {TRANSCRIPT_SCHEMA.latest};"),
    ):
        pg.check_schema(conn, target, newer)
    steps = pg.migrate(target, [newer])
    latest = TRANSCRIPT_SCHEMA.latest
    assert [(s.before, s.after) for s in steps] == [(latest, latest + 1)]
    with pg.connect(target) as conn:
        pg.check_schema(conn, target, newer)
        with pytest.raises(pg.SchemaBehindError, match="newer than this ctxengine"):
            pg.check_schema(conn, target, TRANSCRIPT_SCHEMA)


def test_concurrent_migrations_apply_each_step_once(pg_database):
    target = pg.parse_url(fresh_schema_url(pg_database, migrate=False))
    errors: list[BaseException] = []

    def run() -> None:
        try:
            pg.migrate(target)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert all(s["current"] for s in pg.describe(target.url)["schema"].values())


def test_quarantine_records_are_shared_through_the_database(pg_url):
    PgQuarantineLog(pg_url).record("lcm", "compress", "boom")
    other = PgQuarantineLog(pg_url)
    assert [(r.engine, r.method, r.reason) for r in other.records()] == [
        ("lcm", "compress", "boom")
    ]
    assert other.records("legacy") == []
    other.clear()
    assert PgQuarantineLog(pg_url).records() == []


def test_idle_connections_the_server_dropped_are_replaced(pg_url):
    app = f"idle_{uuid.uuid4().hex[:8]}"
    store = PostgresTranscriptStore(f"{pg_url}&application_name={app}")
    try:
        store.open_session("s")
        store.append_live("s", stamped("a"), 0)
        with pg_connect(pg_url, autocommit=True) as admin:
            killed = admin.execute(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                "WHERE application_name = %s",
                (app,),
            ).fetchone()[0]
        assert killed >= 2  # the pooled connection and the lease connection
        assert [r.message["content"] for r in store.live("s")] == ["a"]  # a read, retried
        store.append_live("s", stamped("b"), 1)  # a write, started again at BEGIN
        assert store.count_rows("s") == 2
    finally:
        store.close()


def test_lcm_write_cut_mid_batch_leaves_nothing_half_written(pg_url):
    from ctxengine_lcm.pg_store import PgLcmStore
    from ctxengine_lcm.store import NewMessage

    def message(uid: str, text: str) -> NewMessage:
        return NewMessage(uid, "user", text, "{}", None, None, 3, 3, False, 1.0)

    with pg_connect(pg_url) as conn:
        kill_on(conn, "lcm_messages", "content", "KILL-ME")
    store = PgLcmStore(pg_url)
    conv = store.current_conversation("s").id
    store.append_messages(conv, [message("a", "first")])
    batch = [message("b", "second"), message("c", "third"), message("d", "KILL-ME")]
    with pytest.raises(pg.PgUnavailable, match="nothing of this operation was committed"):
        store.append_messages(conv, batch)
    assert store.conversation(conv).message_count == 1
    assert [i.ref_id for i in store.context_items(conv)] == [store.message_by_uid([conv], "a").id]
    with pg_connect(pg_url, autocommit=True) as conn:
        conn.execute("DROP TRIGGER die ON lcm_messages")
    assert store.append_messages(conv, batch) == 3  # the retry stores the whole batch once
    assert store.conversation(conv).message_count == 4


def test_a_url_with_server_options_and_a_schema_keeps_both(pg_database):
    """``options`` settings are separated by spaces, and the schema adds one more: each
    reaches the server (a space sent as "+" made the connection fail)."""
    url = fresh_schema_url(pg_database) + "&options=-cstatement_timeout%3D4321%20-cwork_mem%3D5MB"
    target = pg.parse_url(url)
    with pg.connect(target) as conn:
        shown = conn.execute(
            "SELECT current_setting('statement_timeout'), current_setting('work_mem'), "
            "current_schema()"
        ).fetchone()
    assert shown == ("4321ms", "5MB", target.schema)


def test_a_message_uid_the_index_cannot_hold_is_refused_before_anything_is_stored(pg_url):
    """A caller keeps its own ``message_uid`` (a session file, a gateway's item ids). One of
    3,200 characters failed the write here, reported as a lost connection ("retry it"),
    where the SQLite store kept it: it is refused with the rule on both."""
    host = ContextHost("legacy", model="gpt-4", context_length=8192, store_path=pg_url,
                       observers=[])  # fmt: skip
    try:
        session = host.open_session("s")
        long_uid = secrets.token_hex(1600)
        with pytest.raises(ValidityError, match=r"'message_uid' .* has 3200 characters"):
            session.add_messages([{"role": "user", "content": "hi", "message_uid": long_uid}])
        assert host.store.count_rows("s") == 0
        session.add_messages([{"role": "user", "content": "hi", "message_uid": "mine-1"}])
        assert [m["message_uid"] for m in session.messages()] == ["mine-1"]
    finally:
        host.close()


class EchoingFailureEngine(QuietEngine):
    """Fails the way engines often do: its error quotes the input it choked on (here a
    tool output printing a path with an embedded null byte, and half of an emoji)."""

    name = "echoing"

    def ingest(self, session_id, messages):
        raise ValueError(f"cannot parse {messages[-1]['content']!s}")


def test_an_engine_error_quoting_a_nul_is_recorded_and_the_turn_falls_back(pg_url):
    """The quarantine record of a failing engine goes to the database. An error message
    holding NUL (or half of a character) failed that write, and with it the fallback:
    the turn raised instead of going on with the default engine. The record keeps the
    message with U+FFFD in their place; a record that cannot be written at all does not
    stop the fallback either (the record is a diagnosis, the fallback the recovery)."""
    from ctxengine_host.runtime.isolation import forget_quarantine, is_quarantined

    forget_quarantine()
    host = ContextHost(EchoingFailureEngine(), model="gpt-4", context_length=8192,
                       store_path=pg_url, observers=[])  # fmt: skip
    try:
        session = host.open_session("s")
        session.add_user_message("read /tmp/test\x00file.py \ud83d")
        session.build_request()
        session.record_response({"role": "assistant", "content": "ok"}, USAGE)
        report = session.finish_turn()
        assert report.mode == "fallback" and report.engine == "legacy"
        assert is_quarantined("echoing")
        (record,) = PgQuarantineLog(pg_url).records("echoing")
        assert "test\ufffdfile.py \ufffd" in record.reason
    finally:
        host.close()
        forget_quarantine()


def test_a_system_prompt_holding_nul_is_refused_before_the_session_opens(pg_url):
    host = ContextHost("legacy", model="gpt-4", context_length=8192, store_path=pg_url,
                       observers=[])  # fmt: skip
    try:
        with pytest.raises(ValueError, match="system_prompt holds a NUL character"):
            host.open_session("s", system_prompt="You are\x00 a bot")
        session = host.open_session("s", system_prompt="You are a bot")
        session.add_user_message("hi")
        assert session.build_request().messages[0] == {"role": "system", "content": "You are a bot"}
    finally:
        host.close()
