"""The store's own operations, called directly, on each backend: the same answers from the
SQLite file and the PostgreSQL schema."""

from __future__ import annotations

import time

from conftest import check_invariants, drive, make_engine

from ctxengine_lcm.seeds import capped_totals
from ctxengine_lcm.store import ContextItem, Grant, NewMessage, NewSummary


def test_store_operations_agree(tmp_path, database):
    engine = make_engine(tmp_path, database=database)
    try:
        store = engine.store
        conv = store.current_conversation("s1")
        assert store.current_conversation("s1").id == conv.id
        message = NewMessage("u1", "user", "needle in text", "{}", None, None, 3, 3, False, 5.0)
        assert store.append_messages(conv.id, [message]) == 1
        found = store.message_by_uid([conv.id], "u1")
        assert found is not None and found.seq == 1 and found.content == "needle in text"
        assert store.known_version(conv.id, "u1", "") and not store.known_version(conv.id, "u2", "")
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


def test_a_stale_compaction_step_and_a_late_one_write_nothing(tmp_path, database):
    engine = make_engine(tmp_path, database=database)
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
        assert check_invariants(database)["summaries"] == 1
    finally:
        engine.dispose()


def test_missed_messages_are_stored_in_their_history_position(tmp_path, database):
    engine = make_engine(tmp_path, database=database)
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
        assert check_invariants(database)["messages"] == 5
    finally:
        engine.dispose()


def _appended_refs_are_stored_ids(store, conv: int, appended) -> None:
    stored = {store.message_by_uid([conv], m.message_uid).id for m in appended.messages}
    assert {i.ref_id for i in appended.items} == stored
    assert [i.ref_id for i in appended.items] == [i.ref_id for i in store.context_items(conv)][
        -len(appended.items) :
    ]


def test_an_appends_ids_are_the_stored_ones_after_deletes_and_at_the_largest_rowid(tmp_path):
    """SQLite append computes the new rows' ids (largest + 1, consecutive) rather than
    reading them back; at SQLite's largest rowid new ids are random and are read back."""
    from ctxengine_lcm.sqlite_store import _MAX_ROWID, SqliteStore

    store = SqliteStore(tmp_path / "ids.db")
    try:
        conv = store.current_conversation("s1").id

        def batch(tag: str) -> list[NewMessage]:
            return [
                NewMessage(f"{tag}{n}", "user", f"text {tag} {n}", "{}", None, None, 3, 3, False, n)
                for n in range(5)
            ]

        _appended_refs_are_stored_ids(store, conv, store.append(conv, batch("a")))
        with store._tx() as conn:  # the newest row gone: its id is given again
            conn.execute("DELETE FROM context_items WHERE ref_id=5")
            conn.execute("DELETE FROM messages WHERE id=5")
        _appended_refs_are_stored_ids(store, conv, store.append(conv, batch("b")))
        assert store.message_by_uid([conv], "b0").id == 5
        other = store.current_conversation("s2").id
        with store._tx() as conn:
            conn.execute(
                "INSERT INTO messages(id, conversation_id, seq, message_uid, role, content, "
                "extra_json, token_count, context_tokens, created_at, digest) "
                "VALUES (?, ?, 1, 'top', 'user', 'x', '{}', 1, 1, 0, '')",
                (_MAX_ROWID, other),
            )
        appended = store.append(conv, batch("c"))
        _appended_refs_are_stored_ids(store, conv, appended)
        assert appended.count == 5
    finally:
        store.close()


def test_match_counts_stop_at_the_cap_over_all_targets(tmp_path, database):
    """A term's matches in messages and summaries are counted together, up to the cap:
    a count that reaches it in the summaries needs no messages (PostgreSQL reads none)."""
    engine = make_engine(tmp_path, database=database)
    try:
        engine.ingest(
            "s1",
            [
                {"role": "user", "content": f"apple note {n}", "message_uid": f"u{n}"}
                for n in range(6)
            ],
        )
        store = engine.store
        conv = engine._conversation()
        items = store.context_items(conv)
        for first in range(0, 6, 2):  # three summaries of two messages each
            pair = [i for i in store.context_items(conv) if i.kind == "message"][:2]
            draft = NewSummary("leaf", 0, f"apple pear summary {first}", 5, 0.0, 1.0, first + 1,
                               first + 2, 2, 0, 10, 0, tuple(i.ref_id for i in pair))  # fmt: skip
            assert store.replace_with_summary(conv, pair, draft) is not None
        assert len(items) == 6
        both = ["messages", "summaries"]
        operands = ['"apple"', '"pear"', '"plum"']

        def totals(targets: list[str], cap: int) -> list[int]:
            return capped_totals(store.match_counts_by_target(targets, operands, cap), cap)

        assert totals(both, 100) == [9, 3, 0]
        assert totals(both, 4) == [4, 3, 0]
        assert totals(both, 2) == [2, 2, 0]
        assert totals(["messages"], 5) == [5, 0, 0]
        assert totals(["summaries"], 100) == [3, 3, 0]
        # By target: exact where the total is below the cap (what a seed's count is).
        apple, pear, plum = store.match_counts_by_target(both, operands, 100)
        assert (apple, pear, plum) == (
            {"messages": 6, "summaries": 3},
            {"messages": 0, "summaries": 3},
            {"messages": 0, "summaries": 0},
        )
        assert store.match_counts_by_target(both, operands, 4)[1:] == [
            {"messages": 0, "summaries": 3},
            {"messages": 0, "summaries": 0},
        ]
        assert store.match_counts_by_target(["messages"], ['"apple"'], 5) == [{"messages": 5}]
    finally:
        engine.dispose()
