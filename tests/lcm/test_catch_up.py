"""Reconciling with the host's live view: a message the host committed but the engine never
ingested (a kill between the two) is stored in its history position, once, cheaply."""

from __future__ import annotations

from conftest import check_invariants, make_engine, query, turn

SESSION = "s1"


def stored_uids(database: str) -> list[str]:
    return [r[0] for r in query(database, "SELECT message_uid FROM lcm_messages ORDER BY seq")]


def live_view(turns: int) -> list[dict]:
    return [m for n in range(turns) for m in turn(n, words=20)]


def test_a_message_skipped_before_a_restart_is_stored_in_place(tmp_path, database):
    live = live_view(6)
    gap = 13  # committed by the host, then the process was killed before the ingest
    engine = make_engine(tmp_path, database=database)
    engine.ingest(SESSION, live[:gap])
    engine.dispose()
    resumed = make_engine(
        tmp_path, database=database
    )  # a new process: no memory of what was checked
    resumed.ingest(SESSION, live[gap + 1 :])  # the next messages arrive first
    assert live[gap]["message_uid"] not in stored_uids(database)
    result = resumed.select_context(live, conversation_messages=live, budget_tokens=100_000)
    assert stored_uids(database) == [m["message_uid"] for m in live]
    assert [m["content"] for m in result.messages] == [m["content"] for m in live]
    resumed.select_context(live, conversation_messages=live, budget_tokens=100_000)
    assert stored_uids(database) == [m["message_uid"] for m in live], "never duplicated"
    check_invariants(database)


def test_a_gap_under_a_summary_goes_after_its_span_and_the_dag_holds(tmp_path, database):
    live = live_view(40)
    gap = 9
    engine = make_engine(tmp_path, database=database, context_length=4_000)
    engine.ingest(SESSION, live[:gap] + live[gap + 1 : 60])
    for _ in range(3):
        engine.compress(live[:gap] + live[gap + 1 : 60], force=True)
    assert engine.store.stats(engine._conversation())["context_summaries_by_depth"]
    engine.dispose()
    resumed = make_engine(tmp_path, database=database, context_length=4_000)
    resumed.compress(live[:60])
    uids = stored_uids(database)
    assert sorted(uids) == sorted(m["message_uid"] for m in live[:60])
    assert len(uids) == 60
    check_invariants(database)
    found = resumed.handle_tool_call("lcm_describe", {"id": live[gap]["message_uid"]})
    assert '"uid"' in found and live[gap]["message_uid"] in found


def test_checks_after_the_first_cost_one_lookup_per_message_stored_elsewhere(tmp_path, database):
    live = live_view(50)
    engine = make_engine(tmp_path, database=database, context_length=1_000_000)
    engine.ingest(SESSION, live)
    engine.select_context(live, conversation_messages=live, budget_tokens=900_000)
    lookups: list[str] = []
    known = engine.store.known_version

    def counting(conversation_id: int, uid: str, digest: str) -> bool:
        lookups.append(uid)
        return known(conversation_id, uid, digest)

    engine.store.known_version = counting
    new = turn(50, words=20)
    engine.ingest(SESSION, new)
    live += new
    engine.select_context(live, conversation_messages=live, budget_tokens=900_000)
    assert lookups == []  # this engine stored them: known without asking
    elsewhere = make_engine(tmp_path, database=database)  # another process, same session
    other = turn(51, words=20)
    elsewhere.ingest(SESSION, other)
    live += other
    engine.select_context(live, conversation_messages=live, budget_tokens=900_000)
    assert lookups == [m["message_uid"] for m in other]
    assert stored_uids(database) == [m["message_uid"] for m in live]
    # A fresh engine (no mark yet) with nothing missing stops at the newest known uid.
    fresh = make_engine(tmp_path, database=database, context_length=1_000_000)
    lookups.clear()
    known = fresh.store.known_version
    fresh.store.known_version = counting
    fresh.select_context(live, conversation_messages=live, budget_tokens=900_000)
    assert lookups == [live[-1]["message_uid"]]


def test_bootstrap_of_a_partly_held_history_fills_the_gaps_in_place(tmp_path, database):
    live = live_view(5)
    engine = make_engine(tmp_path, database=database)
    engine.ingest(SESSION, live[:3] + live[5:12] + live[15:])
    result = engine.bootstrap(SESSION, live, None)
    assert result.imported_messages == 5
    assert stored_uids(database) == [m["message_uid"] for m in live]
    check_invariants(database)
