"""What the host remembers between selections gives exactly what checking afresh gives:
``LiveView.resolve`` reuses the last selection's leading run, ``LiveView.declared_spans`` the
last covers' spans, ``RequestChecker`` the state the last valid request ended in."""

from __future__ import annotations

import copy
from typing import Any

from ctxengine_host.runtime.coverage import declared_spans
from ctxengine_host.runtime.live import LiveView
from ctxengine_host.runtime.validity import RequestChecker, sequence_problems
from ctxengine_host.tokens import TokenCounter, message_digest

Message = dict[str, Any]


def live_view(messages: list[Message]) -> LiveView:
    view = LiveView(TokenCounter("gpt-4"), strict_alternation=False)
    append(view, messages)
    return view


def append(view: LiveView, messages: list[Message]) -> None:
    start = len(view)
    view.extend([view.entry(start + n, m, message_digest(m)) for n, m in enumerate(messages)])


def conversation(count: int) -> list[Message]:
    out: list[Message] = []
    for n in range(count):
        out.append({"role": "user", "content": f"question {n}", "message_uid": f"u{n}"})
        call = {"id": f"c{n}", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        out.append(
            {"role": "assistant", "content": None, "tool_calls": [call], "message_uid": f"a{n}"}
        )
        out.append(
            {"role": "tool", "tool_call_id": f"c{n}", "content": "ok", "message_uid": f"t{n}"}
        )
    return out


def summary(text: str) -> Message:
    return {"role": "user", "content": f"[Summary]\n{text}"}


def engine_copies(messages: list[Message]) -> list[Message]:
    """What an engine like LCM returns: new dicts, the values shared with its own."""
    return [dict(m) for m in messages]


def assert_as_fresh(view: LiveView, selection: list[Message]) -> tuple[Any, ...]:
    """``resolve`` (remembering) agrees with resolving every message afresh."""
    got = view.resolve(selection)
    counts, wire, positions = view._resolve_each(selection)
    assert got == (sum(counts), wire, positions)
    return got


def test_a_grown_selection_reuses_the_leading_run_and_resolves_the_rest():
    history = conversation(4)
    view = live_view(history)
    engine_own = [summary("earlier work"), *map(dict, history[:6])]
    _, first, _ = assert_as_fresh(view, engine_copies(engine_own))
    engine_own += map(dict, history[6:])
    _, second, positions = assert_as_fresh(view, engine_copies(engine_own))
    assert second[0] is first[0]  # the summary's copy, reused
    assert all(a is b for a, b in zip(first[1:], second[1:7], strict=True))
    assert positions == [None, *range(12)]


def test_a_selection_without_its_oldest_messages_reuses_the_rest():
    history = conversation(4)
    view = live_view(history)
    engine_own = [summary("earlier work"), *map(dict, history[:9])]
    _, first, _ = assert_as_fresh(view, engine_copies(engine_own))
    slid = [summary("earlier work, rewritten"), *engine_own[4:], *map(dict, history[9:])]
    _, second, positions = assert_as_fresh(view, engine_copies(slid))
    assert all(a is b for a, b in zip(first[4:], second[1:7], strict=True))
    assert positions == [None, *range(3, 12)]
    shifted = [*engine_own[:1], *engine_own[2:]]  # a run that is not the rest: afresh
    assert assert_as_fresh(view, engine_copies(shifted))[2] == [None, *range(1, 9)]


def test_an_engine_changing_its_own_list_in_place_is_seen():
    history = conversation(2)
    view = live_view(history)
    engine_own = copy.deepcopy(history)  # read back from the engine's store: equal, not ours
    _, wire, _ = assert_as_fresh(view, engine_copies(engine_own))
    assert wire[1] is view.entries[1].wire
    engine_own[1]["tool_calls"][0]["id"] = "c9"  # in the list its next copies share
    _, wire, _ = assert_as_fresh(view, engine_copies(engine_own))
    assert wire[1] is not view.entries[1].wire and wire[1]["tool_calls"][0]["id"] == "c9"


def test_a_summary_holding_a_list_is_copied_again_each_time():
    view = live_view(conversation(1))
    parts = {"role": "user", "content": [{"type": "text", "text": "summary"}]}
    _, first, _ = assert_as_fresh(view, [parts])
    parts["content"][0]["text"] = "changed in place"
    _, second, _ = assert_as_fresh(view, [parts])
    assert second[0] is not first[0] and second[0]["content"][0]["text"] == "changed in place"


def test_a_uid_that_becomes_live_or_gets_a_new_version_is_resolved_again():
    history = conversation(2)
    view = live_view(history[:3])
    ahead = {"role": "user", "content": "question 1", "message_uid": "u1"}  # not live yet
    selection = [summary("s"), *history[:3], ahead]
    assert assert_as_fresh(view, engine_copies(selection))[2][-1] is None
    append(view, history[3:])
    assert assert_as_fresh(view, engine_copies(selection))[2][-1] == 3
    edited = {**history[0], "content": "question 0, edited"}
    append(view, [edited])  # a new version of u0: its position and copy move
    _, wire, positions = assert_as_fresh(view, engine_copies(selection))
    assert positions[1] == 6 and wire[1] is not view.entries[6].wire


def test_a_replaced_view_is_never_resolved_from_before():
    history = conversation(2)
    view = live_view(history)
    selection = engine_copies(history[3:])
    assert assert_as_fresh(view, selection)[2] == [3, 4, 5]
    kept = view.entries[3:]
    view.replace(kept, view.state)
    assert assert_as_fresh(view, engine_copies(history[3:]))[2] == [0, 1, 2]


def assert_spans_as_fresh(view: LiveView, covers: list[Any]) -> list[tuple[int, int]]:
    spans = view.declared_spans(covers)
    assert spans == declared_spans(covers, view.position)
    return spans


def test_covers_declared_again_keep_their_spans_until_a_uid_moves():
    history = conversation(2)
    view = live_view(history[:3])
    covers: list[Any] = [("u0", "a0"), "t0", ("u1", "t1")]  # the last: not live yet
    assert assert_spans_as_fresh(view, covers) == [(0, 3)]
    append(view, history[3:])
    assert assert_spans_as_fresh(view, list(covers)) == [(0, 6)]
    assert assert_spans_as_fresh(view, list(covers)) == [(0, 6)]
    append(view, [{**history[0], "content": "question 0, edited"}])
    assert assert_spans_as_fresh(view, list(covers)) == [(2, 6)]  # u0 is after a0 now
    view.replace(view.entries[3:], view.state)
    assert assert_spans_as_fresh(view, list(covers)) == [(0, 3)]


def test_a_cover_list_changed_in_place_is_seen():
    view = live_view(conversation(2))
    cover = ["u0", "a0"]
    assert assert_spans_as_fresh(view, [cover]) == [(0, 2)]
    cover[1] = "t1"
    assert assert_spans_as_fresh(view, [cover]) == [(0, 6)]
    odd = [(["u0"], "a0"), ("u1",)[:1] * 2]  # an unhashable end; a one-uid tuple
    assert assert_spans_as_fresh(view, odd) == [(3, 4)]


def test_the_checker_finds_what_checking_afresh_finds():
    checker = RequestChecker(strict_alternation=False)
    head = [{"role": "system", "content": "Be brief."}]
    body = conversation(3)
    for end in range(1, len(body) + 1):
        messages = [*head, *body[:end]]
        assert checker.problems(messages) == sequence_problems(messages)
    bad = [*head, *body, {"role": "tool", "tool_call_id": "c0", "content": "late"}]
    assert checker.problems(bad) == sequence_problems(bad) != []
    reordered = [*head, body[1], body[0], *body[2:]]
    assert checker.problems(reordered) == sequence_problems(reordered) != []
    assert checker.problems([*head, *body]) == []


def test_the_checker_keeps_strict_alternation():
    checker = RequestChecker(strict_alternation=True)
    first = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]
    assert checker.problems(first) == []
    twice = [*first, {"role": "assistant", "content": "c"}]
    expected = sequence_problems(twice, strict_alternation=True)
    assert checker.problems(twice) == expected != []
