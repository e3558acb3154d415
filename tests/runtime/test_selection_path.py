"""The select_context path builds the default request only when the selection is not used."""

from __future__ import annotations

import random

from ctxengine_host.contract.models import AssembleResult
from ctxengine_host.runtime.coverage import (
    _index_runs,
    declared_spans,
    merge_spans,
    sent_runs,
    with_declared,
)
from ctxengine_host.runtime.views import HeadedMessagesView, MessagesView

from .engines import RecordingEngine
from .test_selection import ViewRecorder, one_turn, session_with


def test_request_messages_read_as_head_and_live_view_and_are_a_snapshot(make_host):
    engine = ViewRecorder()
    session = session_with(make_host, engine, turns=3)
    request, _ = engine.select_inputs[-1]
    contents = ["You are terse.", "turn 0", "re: turn 0", "turn 1", "re: turn 1", "turn 2"]
    one_turn(session, "later")  # appends to the live view after the call
    assert isinstance(request, MessagesView)
    assert [m["content"] for m in request] == contents
    assert [m["role"] for m in request] == ["system"] + ["user", "assistant"] * 2 + ["user"]
    assert all("message_uid" not in m for m in request)  # provider copies, as before
    assert request[-1] is not request[-1]  # a private copy per read


def test_an_invalid_selection_falls_back_to_the_whole_live_view(make_host):
    engine = RecordingEngine()
    engine.select_result = lambda request, conversation: [
        {"role": "assistant", "content": "no user message"}
    ]
    session = make_host(engine).open_session("s", system_prompt="Be brief.")
    for i in range(3):
        one_turn(session, f"turn {i}")
    session.add_user_message("newest")
    request = session.build_request()
    live = session.messages()
    assert not request.selected and request.sources is None and request.omitted == 0
    assert [m["content"] for m in request.messages] == ["Be brief."] + [m["content"] for m in live]
    assert request.sent_messages == len(live) + 1


def test_an_addition_alone_keeps_the_whole_live_view(make_host):
    engine = RecordingEngine()
    engine.select_result = lambda request, conversation: AssembleResult(
        messages=[], system_prompt_addition="Note."
    )
    session = make_host(engine).open_session("s", system_prompt="Be brief.")
    one_turn(session, "first")
    session.add_user_message("second")
    request = session.build_request()
    assert request.selected and request.system_prompt_addition == "Note."
    assert [m["content"] for m in request.messages] == [
        "Note.\n\nBe brief.",
        "first",
        "re: first",
        "second",
    ]


def test_index_runs_are_the_merged_intervals_of_single_indexes():
    rng = random.Random(7)
    for _ in range(200):
        indexes = [rng.randrange(40) for _ in range(rng.randrange(30))]
        merged = merge_spans([(i, i + 1) for i in indexes])
        assert _index_runs(sorted(indexes)) == merged
        assert with_declared(sent_runs([*indexes, None]), declared_spans([], {}.get)) == merged


def test_a_headed_view_reads_like_the_concatenated_list():
    head = [{"role": "system", "content": "s"}]
    items = [{"role": "user", "content": str(i)} for i in range(4)]
    view = HeadedMessagesView(head, items, 3)
    items.append({"role": "user", "content": "late"})
    assert len(view) == 4 and list(view) == [*head, *items[:3]]
    assert view[0] == head[0] and view[0] is not head[0]
    assert view[-1] == items[2] and view[1:3] == items[:2]
    assert view == [*head, *items[:3]]
    assert list(HeadedMessagesView([], items, 2)) == items[:2]
