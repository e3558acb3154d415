"""SQLite indexes the first INDEXED_CHARS characters of a message (#13, item 11), like
PostgreSQL; a store made before that keeps an exact delete trigger."""

from __future__ import annotations

import sqlite3

from ctxengine_lcm.search import fts_query
from ctxengine_lcm.sqlite_store import INDEXED_CHARS, SqliteStore

OLD_TRIGGER = """
DELETE FROM meta WHERE key = 'fts_indexed_through';
UPDATE meta SET value = '3' WHERE key = 'schema_version';
DROP TRIGGER messages_fts_delete;
CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN
    INSERT INTO messages_fts(messages_fts, rowid, content) VALUES ('delete', old.id, old.content);
END;
"""


def _old_store(path, long_text: str | None) -> None:
    """A store as an earlier release made it: whole texts indexed, whole-text trigger,
    schema version 3 (every message indexed, no mark)."""
    SqliteStore(path).close()
    conn = sqlite3.connect(path)
    conn.executescript(OLD_TRIGGER)
    conn.execute("INSERT INTO conversations(session_id, generation, created_at) VALUES ('s',0,1)")
    for n, text in enumerate(["short one", long_text or "short two"]):
        conn.execute(
            "INSERT INTO messages(conversation_id, seq, message_uid, role, content, extra_json, "
            "token_count, context_tokens, created_at, digest) "
            "VALUES (1, ?, ?, 'user', ?, '{}', 1, 1, 1, ?)",
            (n, f"{n:032x}", text, f"digest-{n}"),
        )
    conn.execute("INSERT INTO messages_fts(rowid, content) SELECT id, content FROM messages")
    conn.commit()
    conn.close()


def _trigger(path) -> str:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(
            "SELECT sql FROM sqlite_master WHERE name='messages_fts_delete'"
        ).fetchone()[0]
    finally:
        conn.close()


def _integrity_after_delete(path) -> None:
    conn = sqlite3.connect(path)
    conn.execute("DELETE FROM messages")
    conn.execute("INSERT INTO messages_fts(messages_fts, rank) VALUES ('integrity-check', 1)")
    conn.commit()
    conn.close()


def test_a_new_store_indexes_a_prefix_and_deletes_it_exactly(tmp_path):
    path = str(tmp_path / "lcm.db")
    _old_store(path, None)
    store = SqliteStore(path)  # no long message: switched to the prefix trigger
    assert "substr" in _trigger(path) and store._indexed.startswith("substr")
    store.close()
    _integrity_after_delete(path)


def test_an_old_store_with_a_long_message_keeps_whole_text_indexing(tmp_path):
    path = str(tmp_path / "lcm.db")
    _old_store(path, "word " * (INDEXED_CHARS // 5 + 10) + "deepword")
    store = SqliteStore(path)
    assert store._indexed == "content" and "substr" not in _trigger(path)
    hits = store.search_fulltext([1], fts_query("deepword").expression, "messages", None,
                                 None, 5, False, 100)  # fmt: skip
    assert len(hits) == 1
    store.close()
    assert SqliteStore(path)._indexed == "content"  # remembered, not rescanned
    _integrity_after_delete(path)
