"""Assembly: budget, exact estimate, stability, drop order, protected tail, large outputs."""

from __future__ import annotations

import json
import re

from conftest import (
    count_tokens,
    drive,
    make_engine,
    query,
    turn,
    uid,
)

from ctxengine_host.runtime.validity import sequence_problems
from ctxengine_lcm.assembly import SummaryJoiner


def _body(result):
    return result.messages[1:]


def test_within_budget_exact_estimate_and_valid(tmp_path, database):
    engine = make_engine(tmp_path, database=database)
    history = drive(engine, 60)
    for budget in (6000, 3000, 1500):
        result = engine.select_context(history, budget_tokens=budget)
        assert result.estimated_tokens == count_tokens(result.messages)
        assert result.estimated_tokens <= budget - count_tokens(result.system_prompt_addition)
        assert not sequence_problems(result.messages)
        assert result.messages[0] == history[0]  # the system prompt is kept first
        assert "lcm_grep" in result.system_prompt_addition


def test_same_list_when_nothing_changed(tmp_path, database):
    engine = make_engine(tmp_path, database=database)
    history = drive(engine, 30)
    first = engine.select_context(history, budget_tokens=6000)
    second = engine.select_context(history, budget_tokens=6000)
    assert first.messages == second.messages
    assert first.estimated_tokens == second.estimated_tokens
    batch = turn(999)
    engine.ingest("s1", batch)
    third = engine.select_context(history + batch, budget_tokens=6000)
    assert third.messages != second.messages
    assert third.messages[-1]["message_uid"] == batch[-1]["message_uid"]


def test_the_context_held_in_process_follows_changes_made_elsewhere(tmp_path, database):
    """A session may move between host processes: the context an engine extends with its
    own appends is trusted only while no other process appended or compacted since."""
    mine = make_engine(tmp_path, database=database)
    history = drive(mine, 20)
    other = make_engine(tmp_path / "other", database=database)
    for n in range(20, 28):
        batch = turn(n)
        history += batch
        (other if n % 3 == 0 else mine).ingest("s1", batch)
        if n == 25:
            other.compress(history, force=True)
        result = mine.select_context(history, budget_tokens=6000)
        afresh = make_engine(tmp_path / "new", database=database)  # holds nothing yet
        assert result == afresh.select_context(history, budget_tokens=6000), n
        afresh.dispose()
        assert result.messages[-1]["message_uid"] == batch[-1]["message_uid"]


def test_summaries_are_marked_with_ids_and_time_range(tmp_path, database):
    engine = make_engine(tmp_path, database=database)
    history = drive(engine, 40)
    result = engine.select_context(history, budget_tokens=6000)
    summary = result.messages[1]
    assert summary["role"] == "user"
    assert summary["content"].startswith("[Summary sum_")
    assert "Z to 20" in summary["content"] and "lcm_expand(id=" in summary["content"]


def test_the_same_leading_summaries_are_sent_as_the_same_text_object(tmp_path, database):
    """Each request sends the joined summaries again: while the same ones lead, the text is
    the one string made before (hashed once wherever its count is looked up), and equal to
    a join made anew."""
    engine = make_engine(tmp_path, database=database)
    history = drive(engine, 40)
    first = engine.select_context(history, budget_tokens=6000).messages[1]
    assert first["content"].startswith("[Summary sum_") and "\n\n[Summary sum_" in first["content"]
    batch = turn(999)
    engine.ingest("s1", batch)
    second = engine.select_context(history + batch, budget_tokens=6000).messages[1]
    assert second is not first and second["content"] is first["content"]
    join = SummaryJoiner()
    parts = ("a", "b")
    assert join(parts) == "a\n\nb" and join(("a", "b")) is join(parts)
    for n in range(SummaryJoiner.LIMIT + 1):
        assert join((str(n),)) == str(n)
    assert join(("a", "b")) == "a\n\nb"


def test_oldest_summaries_dropped_first_and_newest_user_turn_kept(tmp_path, database):
    engine = make_engine(tmp_path, database=database)
    history = drive(engine, 60)
    full = engine.select_context(history, budget_tokens=6000)
    tight = engine.select_context(history, budget_tokens=900)
    assert tight.estimated_tokens <= 900
    newest_user = next(m for m in reversed(history) if m["role"] == "user")
    # Kept (shortened: it is over a quarter of this tiny budget, #14).
    assert newest_user["message_uid"] in [m.get("message_uid") for m in _body(tight)]
    # What survives is a suffix of the full selection (the oldest parts went first).
    full_body, tight_body = _body(full), _body(tight)
    tail = [m["message_uid"] for m in tight_body if "message_uid" in m]
    full_uids = [m.get("message_uid") for m in full_body]
    assert tail == full_uids[len(full_uids) - len(tail) :]


def test_a_long_agent_loop_is_summarized_inside_the_turn(tmp_path, database):
    """One user message, then a long tool loop (#14): the old middle of the newest turn is
    summarized; the task and the newest calls stay raw; the summaries declare their cover."""
    engine = make_engine(tmp_path, database=database, fresh_tail_messages=8)
    history = drive(engine, 2)
    batch = [{"role": "user", "content": "refactor everything", "message_uid": uid()}]
    for n in range(30):
        call = f"loop_{n}"
        output = " ".join(f"edit{n}x{i}" for i in range(120))
        batch += [
            {
                "role": "assistant",
                "content": None,
                "message_uid": uid(),
                "tool_calls": [
                    {
                        "id": call,
                        "type": "function",
                        "function": {"name": "edit", "arguments": "{}"},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": call, "content": output, "message_uid": uid()},
        ]
    engine.ingest("s1", batch)
    report = engine.compress(history + batch, force=True)
    assert report.compacted
    result = engine.select_context(history + batch, budget_tokens=6000)
    uids = [m.get("message_uid") for m in result.messages]
    assert batch[0]["message_uid"] in uids  # the task
    assert all(m["message_uid"] in uids for m in batch[-8:])  # the newest calls, raw
    assert not all(m["message_uid"] in uids for m in batch[1:-8])  # the middle: summarized
    assert result.covers and "[Summary sum_" in result.messages[1]["content"]
    assert uncovered(history + batch, result) == []


def uncovered(live: list[dict], result) -> list[int]:
    """Positions of live messages neither in the selection nor in a declared cover."""
    position = {m["message_uid"]: i for i, m in enumerate(live) if "message_uid" in m}
    covered = {position[u] for m in result.messages if (u := m.get("message_uid")) in position}
    for first, last in result.covers:
        covered.update(range(position[first], position[last] + 1))
    return [i for i in position.values() if i not in covered]


#: A tool output far over ``large_output_tokens`` (500): 2,000 lines, every one "secret-N".
BIG = "\n".join(f"line {i}: secret-{i * 7} payload" for i in range(2000))


def dump(content: str) -> list[dict]:
    """A user turn whose tool call returns ``content``."""
    return [
        {"role": "user", "content": "dump the log", "message_uid": uid()},
        {
            "role": "assistant",
            "content": None,
            "message_uid": uid(),
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "cat", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": content, "message_uid": uid()},
    ]


def test_large_tool_output_kept_outside_the_context(tmp_path, database):
    engine = make_engine(tmp_path, database=database, large_output_tokens=500)
    history = drive(engine, 3)
    batch = dump(BIG)
    engine.ingest("s1", batch)
    result = engine.select_context(history + batch, budget_tokens=6000)
    stub = result.messages[-1]
    assert stub["role"] == "tool" and stub["tool_call_id"] == "c1"
    assert len(stub["content"]) < 2000 and batch[-1]["message_uid"] in stub["content"]
    # The output is stored once, verbatim, and comes back whole through paging.
    pieces, offset = [], 0
    while offset is not None:
        out = json.loads(
            engine.handle_tool_call(
                "lcm_expand", {"id": batch[-1]["message_uid"], "offset": offset, "max_tokens": 3000}
            )
        )
        pieces.append(out["message"]["content"])
        offset = out["next_offset"]
    assert "".join(pieces) == BIG and len(pieces) > 2
    sql = "SELECT COUNT(*) FROM lcm_messages WHERE content LIKE %s"
    assert query(database, sql, ("%secret-13965%",)) == [(1,)]


def test_a_word_deep_in_a_large_output_is_found(tmp_path, database):
    engine = make_engine(tmp_path, database=database, large_output_tokens=500)
    batch = dump(BIG)
    engine.ingest("s1", batch)
    hits = json.loads(engine.handle_tool_call("lcm_grep", {"pattern": "secret-13965"}))
    assert [r["role"] for r in hits["results"]] == ["tool"]
    # Ranked by its beginning, shown by a snippet around the match deep inside.
    snippet = hits["results"][0]["snippet"]
    assert "13965" in snippet and len(snippet) < 1_000, snippet


def test_the_system_prompt_addition_claims_summaries_only_when_the_request_has_them(
    tmp_path, database
):
    from ctxengine_lcm.assembly import SYSTEM_PROMPT_ADDITION, SYSTEM_PROMPT_ADDITION_NO_SUMMARIES

    engine = make_engine(tmp_path, database=database)
    history = drive(engine, 2)
    plain = engine.select_context(history, budget_tokens=6000)
    assert plain.system_prompt_addition == SYSTEM_PROMPT_ADDITION_NO_SUMMARIES
    assert "[Summary" not in SYSTEM_PROMPT_ADDITION_NO_SUMMARIES and plain.covers == []
    history = history + drive(engine, 40, start=2)[1:]
    summarized = engine.select_context(history, budget_tokens=6000)
    assert summarized.system_prompt_addition == SYSTEM_PROMPT_ADDITION
    assert summarized.covers and uncovered(history, summarized) == []


def test_a_task_over_a_quarter_of_the_budget_is_sent_shortened(tmp_path, database):
    from ctxengine_host.contract.tasktext import TASK_MARKER_PREFIX

    engine = make_engine(tmp_path, database=database)
    history = drive(engine, 3)
    task = "Fix the parser. " + " ".join(f"Case {i} fails on long input." for i in range(600))
    big = {"role": "user", "content": task + " Finally: run the suite.", "message_uid": uid()}
    engine.ingest("s1", [big])
    result = engine.select_context([*history, big], budget_tokens=6000)
    (sent,) = [m for m in result.messages if m.get("message_uid") == big["message_uid"]]
    assert TASK_MARKER_PREFIX in sent["content"]
    assert sent["content"].startswith("Fix the parser.") and sent["content"].endswith("suite.")
    assert count_tokens(sent) <= 6000 // 4 * 1.1
    assert result.estimated_tokens <= 6000


def _summary(ref_id: int, depth: int, tokens: int):
    from ctxengine_lcm.store import ContextItem

    return ContextItem(0, "summary", ref_id, tokens, depth, "")


def test_condensed_summaries_open_deepest_first_within_the_room():
    from ctxengine_lcm.assembly import expand_summaries

    # sum 1 (depth 2) holds sums 2 and 3 (depth 1); sum 3 holds leaves 4 and 5.
    tree = {
        1: [_summary(2, 1, 60), _summary(3, 1, 70)],
        3: [_summary(4, 0, 50), _summary(5, 0, 50)],
    }
    top, newer = _summary(1, 2, 100), _summary(6, 1, 80)
    sources = lambda item: tree.get(item.ref_id, [])  # noqa: E731
    opened, extra = expand_summaries([top, newer], 0, sources)
    assert opened == {} and extra == 0  # no room: the context's own summaries
    opened, extra = expand_summaries([top, newer], 30, sources)
    assert [s.ref_id for s in opened[1]] == [2, 3] and extra == 30
    # More room opens the next level under the same origin; a summary without sources
    # (sum 6 here) stays itself.
    opened, extra = expand_summaries([top, newer], 60, sources)
    assert [s.ref_id for s in opened[1]] == [2, 4, 5] and extra == 60 and 6 not in opened


def test_spare_room_shows_the_summaries_under_a_condensed_one(tmp_path, database):
    """A request with room below the compaction threshold carries the finer summaries
    instead of their condensation, and still declares what it covers."""
    engine = make_engine(tmp_path, database=database, summary_budget_fraction=0.05)
    history = drive(engine, 120)
    conversation = engine.store.conversation(engine._conversation())
    items = engine.store.context_items(conversation.id)
    condensed = [i.ref_id for i in items if i.kind == "summary" and i.depth > 0]
    assert condensed, "the sweep condensed nothing: the test shows nothing"
    engine.update_model("gpt-4", 100_000)  # a larger window: room below its threshold
    sent = engine.select_context(history, budget_tokens=60_000)
    ids = {int(m) for m in re.findall(r"\[Summary sum_(\d+) ", sent.messages[1]["content"])}
    assert not ids & set(condensed)  # each condensed summary shown as its sources
    assert sent.estimated_tokens == count_tokens(sent.messages)
    assert len(sent.covers) == len(ids)


def _summary_reads(engine) -> list[int]:
    """The summary ids the engine reads from its (real) store from now on."""
    reads: list[int] = []
    read = engine.store.summaries_by_id

    def counted(ids):
        ids = list(ids)
        reads.extend(ids)
        return read(ids)

    engine.store.summaries_by_id = counted
    return reads


def test_summaries_that_leave_the_request_and_return_are_not_read_again(tmp_path, database):
    """A condensed summary opened at assembly closes again when the room shrinks: its
    sources leave the request and come back. They are rendered and counted once."""
    engine = make_engine(tmp_path, database=database)
    drive(engine, 120)
    items = engine._context_items(engine.store.conversation(engine._conversation()))
    summaries = [i for i in items if i.kind == "summary"]
    assert len(summaries) >= 2, "nothing was summarized: the test shows nothing"
    first = engine._render(items)
    engine._render([i for i in items if i.kind == "message"])  # the summaries leave
    reads = _summary_reads(engine)
    again = engine._render(items)
    assert reads == [] and again == first
    for message, item in zip(again, items, strict=True):
        if item.kind == "summary":
            assert engine._rendered_tokens[id(message)] == count_tokens(message)


def test_rendered_summaries_kept_out_of_the_request_are_bounded(tmp_path, database, monkeypatch):
    from ctxengine_lcm import engine as lcm_engine

    monkeypatch.setattr(lcm_engine, "RENDERED_SUMMARIES_KEPT", 1)
    engine = make_engine(tmp_path, database=database)
    drive(engine, 120)
    items = engine._context_items(engine.store.conversation(engine._conversation()))
    engine._render(items)
    messages = [i for i in items if i.kind == "message"]
    engine._render(messages)
    held = {ref for kind, ref in engine._rendered if kind == "summary"}
    assert len(held) == 1 and set(engine._summary_tokens) == held
    assert {ref for kind, ref in engine._rendered if kind == "message"} == {
        i.ref_id for i in messages
    }
    reads = _summary_reads(engine)
    engine._render(items)
    assert len(reads) == sum(1 for i in items if i.kind == "summary") - 1
