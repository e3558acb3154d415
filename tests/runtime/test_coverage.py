"""Nothing left out silently (#14 item 2): the host's coverage check and omission markers."""

from __future__ import annotations

from ctxengine_host.contract.models import AssembleResult
from ctxengine_host.replay.model import ReplayReport, TurnRow
from ctxengine_host.runtime.coverage import (
    OMISSION_MARKER_PREFIX,
    declared_spans,
    omission_text,
    sent_runs,
    uncovered_runs,
    with_declared,
)
from ctxengine_host.runtime.validity import sequence_problems

from .engines import RecordingEngine

USAGE = {"prompt_tokens": 50, "completion_tokens": 5}


def grow(session, turns: int) -> None:
    for n in range(turns):
        session.add_user_message(f"question {n}")
        session.build_request()
        session.record_response({"role": "assistant", "content": f"answer {n}"}, USAGE)
        session.finish_turn()


def markers(request) -> list[str]:
    return [
        m["content"] for m in request.messages if OMISSION_MARKER_PREFIX in (m["content"] or "")
    ]


class SilentDropper(RecordingEngine):
    """Sends the first exchange and the newest message; says nothing about the middle."""

    name = "silent-dropper"

    def __init__(self, config=None, context=None):
        super().__init__(config, context)
        self.select_result = lambda request, conversation: (
            [conversation[0], conversation[1], conversation[-1]] if len(conversation) > 3 else None
        )


class DeclaringDropper(RecordingEngine):
    """The same selection, with a summary that declares the middle it covers."""

    name = "declaring-dropper"

    def __init__(self, config=None, context=None):
        super().__init__(config, context)
        self.select_result = self._select

    def _select(self, request, conversation):
        if len(conversation) < 4:
            return None
        return AssembleResult(
            messages=[
                conversation[0],
                conversation[1],
                {"role": "user", "content": "Summary: questions and answers 1 to N."},
                conversation[-1],
            ],
            covers=[(conversation[2]["message_uid"], conversation[-2]["message_uid"])],
        )


def test_an_engine_that_drops_messages_silently_is_caught_and_marked(make_host):
    session = make_host(SilentDropper()).open_session("s", system_prompt="sys")
    grow(session, 4)
    session.add_user_message("the newest question")
    request = session.build_request()
    # live: 4 exchanges (8 messages) + the newest question; sent: 2 + 1.
    assert request.omitted == 6
    (marker,) = markers(request)
    assert marker.startswith(omission_text([(2, 8)]))
    assert marker.endswith("the newest question")  # joined the user message: still valid
    assert sequence_problems(request.messages, strict_alternation=True) == []
    assert request.estimated_tokens == (
        session.host.counter.count_messages(request.messages)
        + session.host.counter.count_tools(request.tools)
    )
    report = session.finish_turn()
    assert report.omitted_messages == 6 and report.requests_with_omissions == 1


def test_declared_covers_satisfy_the_invariant(make_host):
    session = make_host(DeclaringDropper()).open_session("s", system_prompt="sys")
    grow(session, 4)
    session.add_user_message("the newest question")
    request = session.build_request()
    assert request.selected and request.omitted == 0 and markers(request) == []


def test_a_default_request_is_not_checked_at_all(make_host):
    session = make_host(RecordingEngine()).open_session("s")
    grow(session, 3)
    session.add_user_message("again")
    request = session.build_request()
    assert request.sources is None and request.omitted == 0
    assert request.sent_messages == len(request.messages) == 7


def test_a_marker_between_assistant_messages_is_a_user_message_of_its_own(make_host):
    engine = RecordingEngine()
    engine.select_result = lambda request, conversation: (
        [conversation[0], conversation[1], conversation[-2], conversation[-1]]
        if len(conversation) > 6
        else None
    )
    session = make_host(engine).open_session("s")
    grow(session, 3)
    session.add_user_message("newest")
    request = session.build_request()
    roles = [m["role"] for m in request.messages]
    assert roles == ["user", "assistant", "user", "assistant", "user"]
    assert request.messages[2]["content"].startswith(OMISSION_MARKER_PREFIX)
    assert request.omitted == 3


def test_the_warning_names_a_single_message_as_one(make_host, caplog):
    """A run of one live message is ``#2`` in the warning, as in the marker (``#2-#2``)."""
    engine = RecordingEngine()
    engine.select_result = lambda request, conversation: (
        [conversation[0], *conversation[2:]] if len(conversation) > 3 else None
    )
    session = make_host(engine).open_session("s")
    grow(session, 2)
    session.add_user_message("newest")
    with caplog.at_level("WARNING"):
        assert session.build_request().omitted == 1
    (warning,) = [r.getMessage() for r in caplog.records if "left out" in r.getMessage()]
    assert "(#2)" in warning


def test_intervals_merge_ranges_and_single_uids():
    position = {"a": 0, "b": 1, "c": 2, "d": 3, "e": 4, "f": 5}.get
    sent = [position("a"), position("f"), None]  # the last one: no uid
    covers = [("b", "c"), "c", ["zz", "e"]]
    covered = with_declared(sent_runs(sent), declared_spans(covers, position))
    assert covered == [(0, 3), (5, 6)]
    assert uncovered_runs(6, covered) == [(3, 5)]
    assert uncovered_runs(6, [(0, 6)]) == []


def test_the_replay_report_lists_omissions_as_errors():
    report = ReplayReport("s.jsonl", "x", None, False, None, "gpt-4", 8192, 10)
    report.turns = [TurnRow(turn=0), TurnRow(turn=1, omitted_messages=5, requests_with_omissions=2)]
    summary = report.summary()
    assert summary["omitted_without_cover"] == 5 and summary["requests_with_omissions"] == 2
    (error,) = report.to_dict()["errors"]
    assert "2 requests left live messages out without a summary" in error
