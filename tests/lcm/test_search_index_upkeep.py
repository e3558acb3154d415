"""Search-index upkeep after a compaction (#17): the SQLite store merges the small FTS5
segments that per-turn appends leave, so a long history's searches look each term up in
a few segments; what a search finds does not change."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from conftest import drive, make_engine, turn

from ctxengine_lcm.render import to_new_message
from ctxengine_lcm.sqlite_store import SqliteStore


def _segments(path: Path, fts: str = "messages_fts") -> int:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(f"SELECT count(DISTINCT segid) FROM {fts}_idx").fetchone()[0]
    finally:
        conn.close()


def _store_with_turns(path: Path, turns: int) -> tuple[SqliteStore, int]:
    """``turns`` appends, one transaction each, as a hosted session makes them."""
    store = SqliteStore(path)
    conversation = store.current_conversation("s").id
    for n in range(turns):
        rows = [
            to_new_message(m, f"{n:04d}-{i}", 10, float(n), None) for i, m in enumerate(turn(n))
        ]
        store.append(conversation, rows)
    return store, conversation


def _found(store: SqliteStore, conversation: int, query: str) -> list[int]:
    hits = store.search_fulltext([conversation], query, "messages", None, None, 50, True, None)
    return sorted(h.id for h in hits)


def test_tidying_merges_segments_and_finds_the_same(tmp_path: Path) -> None:
    path = tmp_path / "lcm.db"
    store, conversation = _store_with_turns(path, 60)
    queries = ['"question"', '"fact7" OR "value31"', '"w12x3"', '"read_file"']
    before = {q: _found(store, conversation, q) for q in queries}
    segments_before = _segments(path)
    assert segments_before >= 6  # automerge joins only eight of a level

    for _ in range(5):
        store.tidy_search_index()

    assert _segments(path) <= 3 < segments_before
    assert {q: _found(store, conversation, q) for q in queries} == before
    conn = sqlite3.connect(path)
    conn.execute("INSERT INTO messages_fts(messages_fts) VALUES ('integrity-check')")
    conn.close()
    store.close()


def test_a_store_made_before_gets_usermerge_when_opened(tmp_path: Path) -> None:
    path = tmp_path / "lcm.db"
    SqliteStore(path).close()
    conn = sqlite3.connect(path)
    conn.execute("DELETE FROM messages_fts_config WHERE k = 'usermerge'")
    conn.commit()
    conn.close()

    SqliteStore(path).close()

    conn = sqlite3.connect(path)
    try:
        rows = [
            conn.execute(f"SELECT v FROM {fts}_config WHERE k = 'usermerge'").fetchone()
            for fts in ("messages_fts", "summaries_fts")
        ]
    finally:
        conn.close()
    assert rows == [(2,), (2,)]


def test_each_compaction_tidies_the_index_once(tmp_path: Path, database: str, monkeypatch) -> None:
    engine = make_engine(tmp_path, database=database)
    calls = []
    tidy = engine.store.tidy_search_index
    monkeypatch.setattr(engine.store, "tidy_search_index", lambda: calls.append(tidy()))

    drive(engine, 40)

    assert engine.compression_count > 0
    assert len(calls) == engine.compression_count
