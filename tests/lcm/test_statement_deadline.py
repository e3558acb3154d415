"""A grep's time budget caps the store statement in flight, on both backends: a read of
the grep's thread still running at the deadline is interrupted (``read_deadline``), the
grep answers partial; other threads' reads and every write run as before."""

from __future__ import annotations

import json
import threading
import time

import pytest
from conftest import make_engine, release, uid
from pg.fixtures import fresh_schema_url, pg_connect

from ctxengine_host.stores.pg import is_postgres_url
from ctxengine_lcm.pg_store import PgLcmStore
from ctxengine_lcm.search import WorkBudget
from ctxengine_lcm.store import NewMessage, StatementTimedOut


def slow_read(database: str, seconds: float) -> str:
    """A read statement that takes about ``seconds`` (SQLite: a counting loop)."""
    if is_postgres_url(database):
        return f"SELECT pg_sleep({seconds})"
    rows = int(seconds * 10_000_000)
    return (
        f"WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < {rows}) "
        "SELECT count(*) FROM c"
    )


@pytest.fixture
def engine(tmp_path, database):
    engine = make_engine(tmp_path, database=database, grep_time_budget_seconds=0.001)
    batch = [
        {"role": "user", "content": f"the handler looks fine {n}", "message_uid": uid()}
        for n in range(40)
    ]
    engine.ingest("s1", batch)
    yield engine
    engine.dispose()


def test_a_read_running_past_the_deadline_is_interrupted(engine, database):
    store = engine.store
    started = time.monotonic()
    with store.read_deadline(started + 0.2), pytest.raises(StatementTimedOut):
        store._read(slow_read(database, 5.0))
    assert time.monotonic() - started < 1.5


def test_a_grep_whose_statements_pass_the_deadline_answers_partial(engine, monkeypatch):
    """Between statements only the work cap is checked here, and each statement starts
    past the deadline (1 ms): the store alone stops them."""

    def work_only(budget: WorkBudget, statements: int = 1) -> bool:
        time.sleep(0.002)
        budget.statements -= statements
        return True

    monkeypatch.setattr(WorkBudget, "spend", work_only)
    out = json.loads(engine.handle_tool_call("lcm_grep", {"pattern": "handler looks fine"}))
    assert out["partial"] is True, out
    assert "the 0.001 s time budget ran out" in out["partial_reason"]


def test_another_threads_reads_are_not_interrupted(engine, database):
    store = engine.store
    inside, done = threading.Event(), threading.Event()
    own: list[BaseException] = []

    def past_its_deadline() -> None:
        with store.read_deadline(time.monotonic() - 1):
            try:
                store.conversation(1)
            except StatementTimedOut as exc:
                own.append(exc)
            inside.set()
            done.wait(10)

    other = threading.Thread(target=past_its_deadline)
    other.start()
    try:
        assert inside.wait(10)
        assert store._read(slow_read(database, 0.3))  # this thread has no deadline
    finally:
        done.set()
        other.join()
    assert own, "the deadline's own thread was not stopped"


def test_writes_under_a_passed_deadline_complete(engine):
    store = engine.store
    conversation = store.current_conversation("s1").id
    fresh = [
        NewMessage(uid(), "user", f"zebra crossing {n}", "{}", None, None, 5, 5, False, time.time())
        for n in range(2_000)  # indexing them is one statement, long enough to be stopped
    ]
    with store.read_deadline(time.monotonic() - 1):
        assert store.append(conversation, fresh).count == 2_000
        if hasattr(store, "index_pending"):
            store.index_pending()
        store.tidy_search_index()
        with pytest.raises(StatementTimedOut):  # while its reads are stopped
            store.conversation(conversation)
    found = store.match_counts_by_target(["messages"], ['"zebra"'], 10_000)
    assert found == [{"messages": 2_000}]


@pytest.mark.postgres
def test_a_connection_dropped_while_idle_is_replaced_under_a_deadline(pg_database):
    url = fresh_schema_url(pg_database)
    store = PgLcmStore(url)
    try:
        conversation = store.current_conversation("s1").id
        ((pid,),) = store._read("SELECT pg_backend_pid()")  # the pool's idle connection
        with pg_connect(url, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        with store.read_deadline(time.monotonic() + 10):
            assert store.conversation(conversation).id == conversation
    finally:
        release(url)


@pytest.mark.postgres
def test_a_connection_cancelled_at_the_deadline_is_not_lent_again(pg_database):
    """A cancel request may still be on its way when the reads end: the connection it
    was sent for is closed, not given back to the pool for another statement; reads that
    end before their deadline give theirs back, and nothing is set on it."""
    url = fresh_schema_url(pg_database)
    store = PgLcmStore(url)
    try:
        with store.read_deadline(time.monotonic() + 10):
            ((pid,),) = store._read("SELECT pg_backend_pid()")
        with store.read_deadline(time.monotonic() + 10):
            assert store._read("SELECT pg_backend_pid()") == [(pid,)]  # the same, lent again
            assert store._read("SHOW statement_timeout") == [("0",)]
        with store.read_deadline(time.monotonic() + 0.2):
            store._read("SELECT 1")
            time.sleep(0.4)  # the deadline passes while the connection is idle
            with pytest.raises(StatementTimedOut):
                store._read("SELECT 1")
        ((after,),) = store._read("SELECT pg_backend_pid()")
        assert after != pid
        # The replacement runs a long statement to its end: no cancel reaches it.
        assert store._read("SELECT pg_sleep(0.3), 1") == [("", 1)]
    finally:
        release(url)


@pytest.mark.postgres
def test_a_statement_sent_at_the_deadlines_edge_is_still_stopped(pg_database):
    """The store sends no read past the deadline, but one sent at its edge can reach the
    server after the cancel did (ignored there, between statements): the watch cancels
    again while the reads are open."""
    import psycopg

    url = fresh_schema_url(pg_database)
    store = PgLcmStore(url)
    try:
        with store.read_deadline(time.monotonic() + 0.1):
            reads = store._deadline_reads()
            reads.read("warm-up", "SELECT 1")  # the connection is taken and watched
            time.sleep(0.3)  # the first cancel found it idle
            started = time.monotonic()
            with pytest.raises(psycopg.errors.QueryCanceled):
                reads.read("late", "SELECT pg_sleep(5)")
            assert time.monotonic() - started < 1.0
    finally:
        release(url)
