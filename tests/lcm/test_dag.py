"""DAG invariants: lineage, exact expansion, the whole history represented."""

from __future__ import annotations

import json
import math

from conftest import check_invariants, drive, make_engine, query


def _seq_coverage(engine) -> list[tuple[int, int]]:
    """The (first, last) message seq of each active context item, in order."""
    store = engine.store
    spans = []
    for item in store.context_items(engine._conversation()):
        if item.kind == "summary":
            s = store.summary(item.ref_id)
            spans.append((s.first_seq, s.last_seq))
        else:
            m = store.message(item.ref_id)
            spans.append((m.seq, m.seq))
    return spans


def test_every_message_reachable_once_and_history_contiguous(tmp_path, database):
    engine = make_engine(tmp_path, database=database)
    drive(engine, 120)
    totals = check_invariants(database)
    assert totals["messages"] == 480
    assert totals["summaries"] > 10
    spans = _seq_coverage(engine)
    # Summaries and raw items together cover seq 1..N with no gap and no overlap.
    expected = 1
    for first, last in spans:
        assert first == expected
        expected = last + 1
    assert expected == 481
    depths = engine.get_status()["context_summaries_by_depth"]
    assert any(int(d) >= 1 for d in depths), depths


def test_expansion_returns_exactly_the_sources_in_order(tmp_path, database):
    engine = make_engine(tmp_path, database=database)
    history = drive(engine, 80)
    originals = {m["message_uid"]: m for m in history if "message_uid" in m}
    store = engine.store
    conn_ids = [
        i.ref_id for i in store.context_items(engine._conversation()) if i.kind == "summary"
    ]
    assert conn_ids
    checked_leaf = checked_condensed = 0
    frontier = list(conn_ids)
    while frontier:
        sid = frontier.pop()
        kind, sources = store.summary_source_ids(sid)
        got: list[str] = []
        start = 0
        while start is not None:
            out = json.loads(
                engine.handle_tool_call(
                    "lcm_expand", {"id": f"sum_{sid}", "start": start, "max_tokens": 16000}
                )
            )
            got += [item["id"] for item in out["items"]]
            start = out["next_start"]
        prefix = "msg_" if kind == "leaf" else "sum_"
        assert got == [f"{prefix}{s}" for s in sources]
        if kind == "leaf":
            checked_leaf += 1
            out = json.loads(engine.handle_tool_call("lcm_expand", {"id": f"sum_{sid}"}))
            for item in out["items"]:
                message = item["message"]
                assert message == originals[message["message_uid"]]  # verbatim
        else:
            checked_condensed += 1
            frontier += sources
    assert checked_leaf > 5 and checked_condensed >= 1


def test_every_summary_keeps_lineage_to_the_context(tmp_path, database):
    engine = make_engine(tmp_path, database=database)
    drive(engine, 100)
    store = engine.store
    in_context = {
        i.ref_id for i in store.context_items(engine._conversation()) if i.kind == "summary"
    }
    for (sid,) in query(database, "SELECT id FROM lcm_summaries"):
        desc = json.loads(engine.handle_tool_call("lcm_describe", {"id": f"sum_{sid}"}))
        root = desc["lineage"][-1] if desc["lineage"] else f"sum_{sid}"
        assert int(root[4:]) in in_context
        assert desc["in_active_context_via"] == root
    for (mid,) in query(database, "SELECT id FROM lcm_messages ORDER BY id LIMIT 60"):
        desc = json.loads(engine.handle_tool_call("lcm_describe", {"id": f"msg_{mid}"}))
        assert desc["in_active_context"] or desc["lineage"], desc
        expected = desc["lineage"][-1] if desc["lineage"] else f"msg_{mid}"
        assert desc["in_active_context_via"] == expected


def test_reset_starts_new_context_and_keeps_the_store(tmp_path, database):
    engine = make_engine(tmp_path, database=database)
    drive(engine, 40)
    before = engine._conversation()
    engine.on_session_reset()
    assert engine._conversation() != before
    assert engine.select_context([{"role": "system", "content": "x"}], budget_tokens=5000) is None
    drive(engine, 5, start=500)
    out = json.loads(engine.handle_tool_call("lcm_grep", {"pattern": "fact3"}))
    assert out["count"] >= 1  # the old conversation is still searchable
    totals = check_invariants(database)
    assert totals["conversations"] == 2 and totals["messages"] == 180


def test_pressure_keeps_the_dag_shallow(tmp_path, database):
    # The summary budget (default share) fills up after a few dozen leaves; the merges it
    # forces must stay balanced (depth logarithmic in the number of leaves), not a chain.
    engine = make_engine(tmp_path, database=database)
    drive(engine, 150)
    ((leaves, depth),) = query(
        database, "SELECT COUNT(*) FILTER (WHERE kind='leaf'), MAX(depth) FROM lcm_summaries"
    )
    assert leaves > 30
    assert depth <= 2 * math.ceil(math.log2(leaves)) + 2, (leaves, depth)
    check_invariants(database)


def test_forced_compaction_of_a_tiny_history_changes_nothing(tmp_path, database):
    engine = make_engine(tmp_path, database=database)
    engine.ingest(
        "s1",
        [
            {"role": "user", "content": "hi", "message_uid": "a" * 32},
            {"role": "assistant", "content": "hello", "message_uid": "b" * 32},
        ],
    )
    result = engine.compress([], force=True)
    assert not result.compacted and result.tokens_after == result.tokens_before


def test_summary_targets_scale_down_with_small_windows():
    from ctxengine_lcm.compaction import summary_targets
    from ctxengine_lcm.config import LcmConfig

    config = LcmConfig()
    assert summary_targets(config, 100_000) == (1_000, 1_200)  # the configured sizes
    leaf, condensed = summary_targets(config, 3_000)  # a 4k window's threshold
    assert leaf <= 120 and condensed <= 150
    assert summary_targets(config, 500) == (64, 64)  # never below a useful minimum
