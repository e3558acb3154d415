"""Round trips of the hot paths on PostgreSQL, pinned: each statement is a network round
trip, which is what makes a rare-term ``lcm_grep`` or an assembly slower than on SQLite.
The batched store methods give the same answers as the one-at-a-time ones on both backends.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
import pytest

from ctxengine_lcm.engine import LcmEngine
from ctxengine_lcm.store import Grant

from .fixtures import fresh_schema_url
from .test_lcm_backends import drive, exchange, make_engine, tool


@pytest.fixture(params=["sqlite", "postgresql"])
def lcm_database(request, tmp_path) -> str:
    if request.param == "sqlite":
        return str(tmp_path / "lcm.db")
    return fresh_schema_url(request.getfixturevalue("pg_database"))


@pytest.fixture
def driven(lcm_database: str, tmp_path: Path) -> Iterator[LcmEngine]:
    """An engine whose history has been compacted (some messages covered by summaries)."""
    engine = make_engine(lcm_database, tmp_path)
    drive(engine, 30)
    yield engine
    engine.dispose()


class RoundTripCounter:
    """Counts the round trips of every psycopg connection of this process: a statement
    sent alone is one, statements sent together in pipeline mode are one. Entering gives
    the trips, each the list of its statements."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.trips: list[list[str]] = []
        self._together: list[str] | None = None
        execute = psycopg.Cursor.execute
        pipeline = psycopg.Connection.pipeline

        def counted(cursor, query, *args, **kwargs):
            if self._together is None:
                self.trips.append([str(query)])
            else:
                self._together.append(str(query))
            return execute(cursor, query, *args, **kwargs)

        @contextmanager
        def together(conn, *args, **kwargs):
            with pipeline(conn, *args, **kwargs) as sent:
                self._together = []
                try:
                    yield sent
                finally:
                    self.trips.append(self._together)
                    self._together = None

        monkeypatch.setattr(psycopg.Cursor, "execute", counted)
        monkeypatch.setattr(psycopg.Connection, "pipeline", together)

    def __enter__(self) -> list[list[str]]:
        self.trips.clear()
        return self.trips

    def __exit__(self, *exc: object) -> None:
        pass


def statements(trips: list[list[str]]) -> list[str]:
    """Every statement of ``trips``, in order."""
    return [sql for trip in trips for sql in trip]


def test_rare_term_grep_and_assembly_round_trips(pg_database, tmp_path, monkeypatch):
    engine = make_engine(fresh_schema_url(pg_database), tmp_path)
    try:
        history = drive(engine, 30)
        counter = RoundTripCounter(monkeypatch)
        args = {"pattern": "value3 value5 value21", "scope": "messages", "limit": 50}
        with counter as trips:
            found = tool(engine, "lcm_grep", args)
        assert found["count"] == 3
        # Each word's match count (seeds.py: the rare words find the candidates), the
        # caller's scope and grants read in the same statement; the search with each hit's
        # covering summary and whether it is a tool call; the counts of the query's
        # alternatives (`value3` is also looked for as `value 3`, query.py: its words found
        # fewer hits than the pool holds; none matches, so no search for them). The hits are
        # answers, not tool calls: no look-up of call results. The time budget's cap on a
        # statement in flight costs none (a cancel at the deadline, from another thread).
        sql = statements(trips)
        assert len(trips) == 3, "\n".join(q[:90] for q in sql)
        assert "lcm_grants" in trips[0][0], trips[0]
        assert not any("statement_timeout" in q for q in sql), sql
        assert not any("lcm_messages WHERE id = ANY" in q for q in sql), sql
        with counter as trips:
            found = tool(
                engine, "lcm_grep", {**args, "pattern": r"value(3|5|21)\b", "mode": "regex"}
            )
        assert found["count"] == 3
        # Regex hits come from a row scan: their lineage is one look-up for all of them.
        assert sum("lcm_summary_messages" in q for q in statements(trips)) == 1, trips

        head = history[:1]  # a view without uids (as in benchmarks/bench_pg.py)
        engine.ingest("s1", exchange(99))
        with counter as trips:
            mine = engine.select_context(head, budget_tokens=6_000)
        # Its own append extended the context it held: the conversation row confirms that
        # nobody changed the context since.
        assert len(trips) == 1, trips
        assert mine == assembled_afresh(engine, head, tmp_path)
        with counter as trips:
            engine.select_context(head, budget_tokens=6_000)
        assert len(trips) == 1, trips  # unchanged context: the conversation row only
        other = make_engine(engine.settings.database, tmp_path)  # another process's engine
        other.ingest("s1", exchange(100))
        other.dispose()
        with counter as trips:
            theirs = engine.select_context(head, budget_tokens=6_000)
        # Changed elsewhere: the conversation row, its context items, the new messages' rows.
        assert len(trips) == 3, trips
        assert theirs == assembled_afresh(engine, head, tmp_path)
        assert theirs.messages[-1]["content"].startswith("answer 100:")
    finally:
        engine.dispose()


def test_keyword_grep_round_trips(pg_database, tmp_path, monkeypatch):
    """A grep over messages and summaries: the two searches of one expression go in one
    round trip, and a target holding no match of the rare words is not searched."""
    engine = make_engine(fresh_schema_url(pg_database), tmp_path)
    try:
        drive(engine, 30)
        counter = RoundTripCounter(monkeypatch)
        with counter as trips:
            found = tool(engine, "lcm_grep", {"pattern": "value3 value5 value21", "limit": 10})
        assert found["count"] == 3
        sql = statements(trips)
        # The words' match counts by target, with the scope and grants; the messages search
        # (no summary holds the words: none searched); the alternatives' counts.
        assert len(trips) == 3, "\n".join(q[:90] for q in sql)
        assert not any("FROM lcm_summaries s WHERE" in q for q in sql), sql
        with counter as trips:
            found = tool(engine, "lcm_grep", {"pattern": "question topic3", "limit": 10})
        assert {r["kind"] for r in found["results"]} == {"message", "summary"}
        searches = [t for t in trips if t[0].startswith("WITH hits")]
        assert searches and all(len(t) == 2 for t in searches), trips  # messages, summaries
    finally:
        engine.dispose()


def assembled_afresh(engine: LcmEngine, head: list, tmp_path: Path):
    """What an engine that holds nothing yet (a new process) assembles."""
    fresh = make_engine(engine.settings.database, tmp_path)
    try:
        return fresh.select_context(head, budget_tokens=6_000)
    finally:
        fresh.dispose()


def test_grep_lineage_matches_one_at_a_time_look_ups(driven):
    found = tool(driven, "lcm_grep", {"pattern": "answer", "scope": "messages", "limit": 60})
    assert found["count"] == 30
    covered = [r for r in found["results"] if r["covered_by"] is not None]
    assert 0 < len(covered) < 30  # some compacted, the fresh tail not
    for result in found["results"]:
        parent = driven.store.parent_summary_of_message(int(result["id"].removeprefix("msg_")))
        assert result["covered_by"] == (None if parent is None else f"sum_{parent}")
    ids = [int(r["id"].removeprefix("msg_")) for r in found["results"]]
    assert driven.store.parent_summaries_of_messages([]) == {}
    assert driven.store.parent_summaries_of_messages(ids) == {
        i: p for i in ids if (p := driven.store.parent_summary_of_message(i)) is not None
    }


def test_access_scope_matches_separate_reads(driven):
    store = driven.store
    now = time.time()
    assert store.access_scope("child", now) == ([], [])
    store.create_grant(Grant(0, "child", "s1", 1, 100, 0, None))
    store.create_grant(Grant(0, "child", "nobody", 1, 100, 0, None))
    store.create_grant(Grant(0, "child", "s1", 1, 100, 0, now - 10))  # expired
    store.current_conversation("child")
    own, grants = store.access_scope("child", now)
    assert own == store.session_conversation_ids("child") and len(own) == 1
    assert grants == store.active_grants("child", now)
    assert [g.conversation_ids for g in grants] == [store.session_conversation_ids("s1"), []]
    # With a grep's first counts, in one statement on PostgreSQL: the same scope, the same
    # counts, for a session with grants and one without.
    for session in ("child", "s1"):
        targets, operands = ["messages", "summaries"], ['"answer"', '"value3"', '"nowhere"']
        assert store.access_scope_and_match_counts(session, now, targets, operands, 50) == (
            store.access_scope(session, now),
            store.match_counts_by_target(targets, operands, 50),
        )


def test_summary_hits_list_their_matching_messages_in_one_statement(
    pg_database, tmp_path, monkeypatch
):
    """The best summary hits' matching messages come from one statement that reads the
    summaries' spans too: no look-up of the spans, no statement per summary."""
    engine = make_engine(fresh_schema_url(pg_database), tmp_path)
    try:
        drive(engine, 30)
        counter = RoundTripCounter(monkeypatch)
        args = {"pattern": "question", "scope": "summaries", "limit": 10}
        with counter as trips:
            found = tool(engine, "lcm_grep", args)
        listed = [r for r in found["results"] if r.get("matching_messages")]
        assert len(listed) > 1, found
        sql = statements(trips)
        assert sum("lcm_messages" in q for q in sql) == 1, "\n".join(q[:90] for q in sql)
        assert not any(q.startswith("SELECT id, conversation_id, kind") for q in sql), sql
    finally:
        engine.dispose()


def test_no_generic_plan_outlives_the_table_sizes_it_was_made_for(pg_database, tmp_path):
    """psycopg prepares a statement on its fifth call, and the server may then keep a
    generic plan made for the table sizes of that moment: made for a new conversation,
    the known-uid check of every later turn scanned the whole conversation (per-turn time
    grew with the history). Prepared statements are planned for each call's values."""
    engine = make_engine(fresh_schema_url(pg_database), tmp_path)
    try:
        drive(engine, 12)
        with engine.store._pool.connection() as conn:
            plans = conn.execute(
                "SELECT count(*), coalesce(sum(generic_plans), 0), coalesce(sum(custom_plans), 0) "
                "FROM pg_prepared_statements"
            ).fetchone()
        prepared, generic, custom = plans
        assert prepared > 0 and custom > 0, plans  # statements are still prepared (parsed once)
        assert generic == 0, plans
    finally:
        engine.dispose()


def test_an_append_is_two_statements_and_records_what_it_stored(pg_database, monkeypatch):
    """Inside its transaction an append sends the counters with the known versions, then
    the messages, their context items and the counters' update in one statement: each
    statement is a wait for the server on every turn. What it reports is what is stored."""
    from ctxengine_lcm.pg_store import PgLcmStore
    from ctxengine_lcm.store import NewMessage

    def message(uid: str, text: str, tokens: int, digest: str = "v1") -> NewMessage:
        return NewMessage(uid, "user", text, "{}", None, None, tokens, tokens, False, 1.0, digest)

    store = PgLcmStore(fresh_schema_url(pg_database))
    try:
        conv = store.current_conversation("s").id
        store.append(conv, [message("a", "first", 3)])
        counter = RoundTripCounter(monkeypatch)
        batch = [message("a", "first", 3), message("b", "second", 4), message("c", "third", 5)]
        with counter as trips:
            done = store.append(conv, batch)
        assert len(trips) == 2, trips
        assert "FOR UPDATE" in trips[0][0] and "INSERT INTO lcm_messages" in trips[1][0]
        assert [m.message_uid for m in done.messages] == ["b", "c"]  # "a" was known
        items = store.context_items(conv)
        assert done.item_rows == tuple((i.ordinal, i.ref_id) for i in items[1:])
        assert list(done.items) == items[1:]
        assert [store.messages_by_id([i.ref_id])[i.ref_id].seq for i in items] == [1, 2, 3]
        row = store.conversation(conv)
        assert (row.message_count, row.context_tokens) == (3, 12)
        assert done.version == row.context_version
        with counter as trips:  # every version known: the read alone, nothing written
            assert store.append(conv, batch[1:]).count == 0
        assert len(trips) == 1, trips
        # A new version of a known uid is stored as a message of its own.
        assert store.append(conv, [message("b", "second, edited", 6, "v2")]).count == 1
        assert store.conversation(conv).message_count == 4
    finally:
        store.close()
