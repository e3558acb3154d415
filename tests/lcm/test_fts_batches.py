"""SQLite indexes messages for full-text search in batches (FTS_BATCH_MESSAGES): rows
above the ``meta`` mark are pending, and every reader of the index indexes them first, so
a search finds a message the moment its append returns, whichever connection stored it."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from ctxengine_lcm.search import fts_query
from ctxengine_lcm.sqlite_store import FTS_BATCH_MESSAGES, SqliteStore
from ctxengine_lcm.store import NewMessage


def _new_store(tmp_path: Path) -> tuple[Path, SqliteStore, int]:
    """A new store file, the store on it and its conversation's id."""
    path = tmp_path / "lcm.db"
    store = SqliteStore(path)
    return path, store, store.current_conversation("s").id


def _message(uid: str, text: str) -> NewMessage:
    return NewMessage(uid, "user", text, "{}", None, None, 3, 3, False, 1.0)


def _indexed(path: Path) -> tuple[int, int]:
    """(the mark, the rows in the index), read on a connection of its own."""
    conn = sqlite3.connect(path)
    try:
        (mark,) = conn.execute(
            "SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'fts_indexed_through'"
        ).fetchone()
        (rows,) = conn.execute("SELECT count(*) FROM messages_fts_docsize").fetchone()
        return mark, rows
    finally:
        conn.close()


def _integrity_check(path: Path) -> None:
    """FTS5's check of the index against the messages it indexes (rank 1: the content
    table too); raises when they differ."""
    conn = sqlite3.connect(path)
    try:
        conn.execute("INSERT INTO messages_fts(messages_fts, rank) VALUES ('integrity-check', 1)")
    finally:
        conn.close()


def _found(store: SqliteStore, conversation: int, word: str) -> list[str]:
    hits = store.search_fulltext(
        [conversation], fts_query(word).expression, "messages", None, None, 500, False, None
    )
    return sorted(h.text for h in hits)


def test_a_message_is_found_right_after_its_append(tmp_path: Path) -> None:
    path, store, conversation = _new_store(tmp_path)
    store.append(conversation, [_message("a", "the zebra crossing")])
    assert _indexed(path) == (0, 0)  # pending

    assert _found(store, conversation, "zebra") == ["the zebra crossing"]
    assert _indexed(path) == (1, 1)
    store.close()
    _integrity_check(path)


def test_appends_index_the_pending_rows_at_the_threshold(tmp_path: Path) -> None:
    path, store, conversation = _new_store(tmp_path)
    for n in range(FTS_BATCH_MESSAGES - 1):
        store.append(conversation, [_message(f"m{n}", f"word{n}")])
    assert _indexed(path) == (0, 0)

    store.append(conversation, [_message("last", "the last one")])
    assert _indexed(path) == (FTS_BATCH_MESSAGES, FTS_BATCH_MESSAGES)
    store.append(conversation, [_message(f"b{n}", f"bulk{n}") for n in range(100)])
    assert _indexed(path) == (FTS_BATCH_MESSAGES + 100, FTS_BATCH_MESSAGES + 100)
    store.close()
    _integrity_check(path)


def test_deleting_pending_and_indexed_messages_keeps_the_index_exact(tmp_path: Path) -> None:
    path, store, conversation = _new_store(tmp_path)
    store.append(conversation, [_message(f"i{n}", f"indexed {n}") for n in range(40)])
    store.append(conversation, [_message(f"p{n}", f"pending {n}") for n in range(3)])
    assert _indexed(path) == (40, 40)
    with store._tx() as conn:  # a pending row, then the newest indexed one and all above it
        conn.execute("DELETE FROM messages WHERE id = 42")
        conn.execute("DELETE FROM messages WHERE id >= 40")
    assert _indexed(path) == (39, 39)  # id 40 is given again: it must count as pending
    store.append(conversation, [_message("new", "pending again")])

    assert _found(store, conversation, "pending") == ["pending again"]
    assert len(_found(store, conversation, "indexed")) == 39
    store.close()
    _integrity_check(path)


def test_a_store_made_before_batches_opens_with_everything_indexed(tmp_path: Path) -> None:
    path, store, conversation = _new_store(tmp_path)
    store.append(conversation, [_message(f"m{n}", f"old text {n}") for n in range(50)])
    store.close()
    conn = sqlite3.connect(path)  # as version 3 left it: every row indexed, no mark
    conn.execute("DELETE FROM meta WHERE key = 'fts_indexed_through'")
    conn.execute("UPDATE meta SET value = '3' WHERE key = 'schema_version'")
    conn.commit()
    conn.close()

    store = SqliteStore(path)
    assert _indexed(path) == (50, 50)
    assert len(_found(store, conversation, "old")) == 50
    store.close()
    _integrity_check(path)


def test_two_connections_interleaving_appends_and_searches_see_everything(
    tmp_path: Path,
) -> None:
    path = tmp_path / "lcm.db"
    first, second = SqliteStore(path), SqliteStore(path)
    conversation = first.current_conversation("s").id
    for n in range(2 * FTS_BATCH_MESSAGES + 5):
        writer, reader = (first, second) if n % 2 else (second, first)
        writer.append(conversation, [_message(f"m{n}", f"turn{n} shared")])
        assert _found(reader, conversation, f"turn{n}") == [f"turn{n} shared"]
        assert len(_found(writer, conversation, "shared")) == n + 1
    first.close()
    second.close()
    _integrity_check(path)


def test_tidying_and_the_integrity_check_index_the_pending_rows(tmp_path: Path) -> None:
    path, store, conversation = _new_store(tmp_path)
    store.append(conversation, [_message("a", "one")])
    store.tidy_search_index()
    assert _indexed(path) == (1, 1)
    store.append(conversation, [_message("b", "two")])
    assert store.integrity_check() == "ok"
    assert _indexed(path) == (2, 2)
    store.close()
    _integrity_check(path)
