"""select_context follow-ups: the system head, O(1) per-request inputs, cached counting."""

from __future__ import annotations

import json

import pytest

from ctxengine_host.contract.engine import ContextEngine
from ctxengine_host.contract.models import PERSISTENCE_ONLY_FIELDS, AssembleResult
from ctxengine_host.runtime import views
from ctxengine_host.runtime.validity import sequence_problems
from ctxengine_host.runtime.views import CopyOnWriteMessages, MessagesView
from ctxengine_host.tokens import TokenCounter

from .engines import OwnsCompactionEngine, RecordingEngine

USAGE = {"prompt_tokens": 50, "completion_tokens": 5}


def one_turn(session, text="hello"):
    session.add_user_message(text)
    request = session.build_request()
    session.record_response({"role": "assistant", "content": f"re: {text}"}, USAGE)
    session.finish_turn()
    return request


def earlier_turns(conversation):
    """The engine's declaration: its system note covers everything before the newest message."""
    if len(conversation) < 2:
        return []
    return [(conversation[0]["message_uid"], conversation[-2]["message_uid"])]


def session_with(make_host, engine, system_prompt="You are terse.", turns=2):
    session = make_host(engine).open_session("s", system_prompt=system_prompt)
    for i in range(turns):
        one_turn(session, f"turn {i}")
    return session


# -- problem 1: only the session's own system prompt is stripped from a selection


def test_engine_added_system_messages_are_kept_after_the_head(make_host):
    engine = RecordingEngine()

    def select(request, conversation):
        return AssembleResult(
            messages=[
                request[0],  # the session's system prompt, as received
                {"role": "system", "content": "Known facts: the sky is blue."},
                {"role": "system", "content": "Summary of earlier turns."},
                conversation[-1],
            ],
            covers=earlier_turns(conversation),
        )

    engine.select_result = select
    session = session_with(make_host, engine)
    session.add_user_message("what colour?")
    request = session.build_request()
    assert request.selected
    assert [(m["role"], m["content"]) for m in request.messages] == [
        ("system", "You are terse."),
        ("system", "Known facts: the sky is blue."),
        ("system", "Summary of earlier turns."),
        ("user", "what colour?"),
    ]
    assert sequence_problems(request.messages) == []


def test_engine_system_messages_follow_the_head_with_the_addition(make_host):
    engine = RecordingEngine()
    engine.select_result = lambda request, conversation: AssembleResult(
        messages=[request[0], {"role": "system", "content": "Recalled: 42."}, conversation[-1]],
        system_prompt_addition="Use the recall tool.",
        covers=earlier_turns(conversation),
    )
    session = session_with(make_host, engine)
    session.add_user_message("the answer?")
    request = session.build_request()
    assert [m["content"] for m in request.messages] == [
        "Use the recall tool.\n\nYou are terse.",
        "Recalled: 42.",
        "the answer?",
    ]
    assert request.estimated_tokens == (
        session.host.counter.count_messages(request.messages)
        + session.host.counter.count_tools(request.tools)
    )


def test_a_selection_without_the_head_gets_it_back_once(make_host):
    engine = RecordingEngine()
    engine.select_result = lambda request, conversation: AssembleResult(
        messages=[{"role": "system", "content": "Engine note."}, conversation[-1]],
        covers=earlier_turns(conversation),
    )
    session = session_with(make_host, engine)
    session.add_user_message("go")
    messages = session.build_request().messages
    assert [m["content"] for m in messages] == ["You are terse.", "Engine note.", "go"]


def test_a_system_message_after_the_conversation_started_is_still_invalid(make_host):
    engine = RecordingEngine()
    engine.select_result = lambda request, conversation: [
        request[0],
        conversation[-1],
        {"role": "system", "content": "late"},
    ]
    session = session_with(make_host, engine)
    session.add_user_message("go")
    before = session.guard.invalid_results["select_context"]
    request = session.build_request()
    assert not request.selected
    assert session.guard.invalid_results["select_context"] == before + 1


# -- problem 2: per-request hooks get O(1) read-only views; compress a private deep copy


class ViewRecorder(OwnsCompactionEngine):
    """Owns compaction, selects the newest message, keeps what each hook received."""

    name = "view-recorder"

    def __init__(self, config=None, context=None):
        super().__init__(config, context)
        self.preflight_inputs: list = []
        self.select_inputs: list = []
        self.turn_inputs: list = []
        self.select_result = self._select

    def _select(self, request, conversation):
        self.select_inputs.append((request, conversation))
        return [conversation[-1]]

    def should_compress_preflight(self, messages):
        self.preflight_inputs.append(messages)
        return False

    def on_turn_complete(self, messages, usage=None, **kwargs):
        self.turn_inputs.append(messages)


def test_per_request_hooks_get_read_only_views_of_the_live_view(make_host):
    engine = ViewRecorder()
    session = session_with(make_host, engine, turns=3)
    request, conversation = engine.select_inputs[-1]
    assert isinstance(conversation, MessagesView) and isinstance(request, MessagesView)
    assert len(conversation) == 5  # the view at the time of the call: a snapshot
    assert all(m.get("message_uid") for m in conversation)  # engines need the uids
    assert list(conversation) == session.messages()[:5]
    assert conversation[-1] is not conversation[-1]  # a private copy per read
    assert isinstance(engine.preflight_inputs[-1], MessagesView)
    assert isinstance(engine.turn_inputs[-1], MessagesView)
    assert not hasattr(conversation, "append") and not hasattr(conversation, "clear")
    # Reads like a list where engines need it.
    assert conversation[-2:] == list(conversation)[-2:]
    assert [*reversed(conversation)] == list(conversation)[::-1]
    extra = [{"role": "user", "content": "x"}]
    assert len(conversation + extra) == 6 == len(extra + conversation)
    assert json.loads(json.dumps(conversation.copy())) == list(conversation)
    with pytest.raises(IndexError):
        conversation[5]


def deface(view) -> None:
    """What a careless engine might do to every message it is given."""
    for message in view:
        for value in message.values():
            if isinstance(value, list):
                for item in value:
                    if isinstance(item, dict):
                        item.clear()
        message["content"] = "DEFACED"


class DefacingEngine(ViewRecorder):
    """Reads and defaces every message each per-request hook gets; selects nothing."""

    name = "defacing"

    def _select(self, request, conversation):
        deface(request)
        deface(conversation)
        return None

    def should_compress_preflight(self, messages):
        deface(messages)
        return False

    def on_turn_complete(self, messages, usage=None, **kwargs):
        deface(messages)


def tool_conversation(session) -> list:
    """A user message, a tool call and its result; the requests built on the way."""
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    requests = []
    session.add_user_message("look up x")
    requests.append(session.build_request().messages)
    session.record_response({"role": "assistant", "content": None, "tool_calls": [call]}, USAGE)
    session.record_tool_results([{"role": "tool", "tool_call_id": "c1", "content": "x=1"}])
    requests.append(session.build_request().messages)
    session.record_response({"role": "assistant", "content": "x is 1"}, USAGE)
    session.finish_turn()
    session.add_user_message("thanks")
    requests.append(session.build_request().messages)
    return requests


def test_an_engine_defacing_its_views_changes_no_row_no_live_message_no_request(
    make_host, tmp_path
):
    def strip_uids(rows):
        return [
            {k: v for k, v in r.message.items() if k not in PERSISTENCE_ONLY_FIELDS} for r in rows
        ]

    clean = make_host(ViewRecorder(), store_path=tmp_path / "clean.db").open_session(
        "s", system_prompt="sys"
    )
    clean.guard.engine.select_result = None
    clean_requests = tool_conversation(clean)
    defaced = make_host(DefacingEngine(), store_path=tmp_path / "defaced.db").open_session(
        "s", system_prompt="sys"
    )
    assert tool_conversation(defaced) == clean_requests
    assert strip_uids(defaced.host.store.rows("s")) == strip_uids(clean.host.store.rows("s"))
    live = defaced.messages()
    assert live[1]["tool_calls"][0]["function"] == {"name": "f", "arguments": "{}"}
    fork = defaced.spawn_subagent("fork")
    assert [m["content"] for m in fork.messages()] == ["look up x", None, "x=1", "x is 1", "thanks"]


def test_a_request_copies_a_constant_number_of_messages_whatever_the_history(
    make_host, monkeypatch, tmp_path
):
    """The host's per-request work does not grow with the live view (an owning engine)."""
    copied = []
    real_copy = views.copy_message

    def counting_copy(value):
        copied.append(1)
        return real_copy(value)

    def copies_per_request(live_messages: int) -> int:
        engine = ViewRecorder()
        host = make_host(engine, store_path=tmp_path / f"{live_messages}.db")
        session = host.open_session("s", system_prompt="sys")
        history = []
        for i in range(live_messages // 2):
            history += [
                {"role": "user", "content": f"q{i}"},
                {"role": "assistant", "content": f"a{i}"},
            ]
        session.add_messages(history)
        session.add_user_message("next")
        monkeypatch.setattr(views, "copy_message", counting_copy)
        copied.clear()
        session.build_request()
        monkeypatch.setattr(views, "copy_message", real_copy)
        return len(copied)

    small, large = copies_per_request(10), copies_per_request(2000)
    assert 0 < small == large


class NoIngestEngine(RecordingEngine):
    """Keeps no history of its own (no ``ingest``): its ``compress`` result is the history."""

    name = "no-ingest"
    ingest = ContextEngine.ingest


def vandal_compress(engine) -> list:
    """Make ``engine.compress`` deface everything it is given; the inputs it got."""
    received = []

    def vandal(messages):
        received.append(messages)
        for m in messages:
            for call in m.get("tool_calls") or ():
                call["function"]["name"] = "vandalised"
            m["content"] = "overwritten"
        messages.pop(0)
        messages.append({"role": "user", "content": "planted"})
        messages[0] = {"role": "user", "content": "replaced"}
        return None

    engine.compress_result = vandal
    return received


def compact_a_tool_call(make_host, engine):
    session = make_host(engine).open_session("s")
    session.add_user_message("call it")
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    session.record_response({"role": "assistant", "content": None, "tool_calls": [call]}, USAGE)
    before = session.messages()
    session.compact()
    return session, before


def test_compress_of_an_engine_without_history_gets_a_private_deep_copy(make_host):
    engine = NoIngestEngine()
    received = vandal_compress(engine)
    session, before = compact_a_tool_call(make_host, engine)
    assert isinstance(received[0], list)
    assert session.messages() == before
    assert [r.message for r in session.host.store.live("s")] == before


def test_compress_of_an_engine_owning_its_history_gets_a_copy_on_write_view(make_host, monkeypatch):
    """No copy of the whole live view: items are copied when read, list edits go to a
    private copy, and a careless engine still cannot change the live view or the store."""
    engine = RecordingEngine()  # implements ingest: it was given every message already
    received = vandal_compress(engine)
    copied = []
    monkeypatch.setattr(views, "copy_message", lambda m: copied.append(m) or real_copy(m))
    session, before = compact_a_tool_call(make_host, engine)
    messages_copied = [m for m in copied if isinstance(m, dict) and "role" in m]
    # One copy per message read, and one at the first list edit for the private list;
    # none up front.
    assert len(messages_copied) == 2 * len(before)
    assert isinstance(received[0], CopyOnWriteMessages)
    assert [m["content"] for m in received[0]] == ["replaced", "planted"]  # its own edits
    assert session.messages() == before
    assert [r.message for r in session.host.store.live("s")] == before


real_copy = views.copy_message


# -- problem 3: a selection of stored messages is counted from the cache


def test_a_selection_of_live_messages_hits_the_token_cache(make_host, monkeypatch):
    engine = RecordingEngine()
    engine.select_result = lambda request, conversation: [request[0], *conversation[-3:]]
    session = session_with(make_host, engine, turns=3)
    session.add_user_message("and now?")
    counter = session.host.counter
    session.build_request()  # warm: every selected version is already counted
    counted = []
    real = TokenCounter.count_message

    def spy(self, message):
        counted.append(message.get("content"))
        return real(self, message)

    monkeypatch.setattr(TokenCounter, "count_message", spy)
    misses = counter.cache_misses
    request = session.build_request()
    assert counted == [] and counter.cache_misses == misses
    assert all(PERSISTENCE_ONLY_FIELDS.isdisjoint(m) for m in request.messages)
    monkeypatch.setattr(TokenCounter, "count_message", real)
    assert request.conversation_tokens == counter.count_messages(request.messages[1:])


def test_a_selection_reuses_the_live_copies_of_unchanged_messages_only(make_host):
    """An unchanged live message goes out as its cached provider copy; an engine's edit of
    one under the same uid is a version of its own: its own copy and count."""
    engine = RecordingEngine()

    def select(request, conversation):
        if len(conversation) < 5:
            return None
        *_, before_last, last = list(conversation)
        changed = {**before_last, "content": "rewritten by the engine"}
        return [request[0], changed, last]

    engine.select_result = select
    session = session_with(make_host, engine, turns=2)
    session.add_user_message("and now?")
    request = session.build_request()
    live = session.live
    assert request.messages[-1] is live.wire[-1]
    assert request.messages[-2] is not live.wire[-2]
    assert request.messages[-2]["content"] == "rewritten by the engine"
    assert "message_uid" not in request.messages[-2]
    counter = session.host.counter
    assert request.conversation_tokens == counter.count_messages(request.messages[1:])


def test_engine_messages_without_uids_are_counted_once_per_version(make_host, monkeypatch):
    engine = RecordingEngine()
    summary = {"role": "user", "content": "[summary of the early turns]"}
    engine.select_result = lambda request, conversation: [summary, *conversation[-1:]]
    session = session_with(make_host, engine, turns=2)
    session.add_messages([{"role": "assistant", "content": "ok"}])
    session.add_user_message("more")
    first = session.build_request()
    counted = []
    real = TokenCounter.count_message

    def spy(self, message):
        counted.append(message.get("content"))
        return real(self, message)

    monkeypatch.setattr(TokenCounter, "count_message", spy)
    for _ in range(3):
        assert session.build_request().conversation_tokens == first.conversation_tokens
    assert counted == []


def test_a_stored_system_message_with_the_prompt_text_is_not_taken_for_the_head(make_host):
    engine = RecordingEngine()
    engine.select_result = lambda request, conversation: [conversation[0], conversation[-1]]
    session = make_host(engine).open_session("s", system_prompt="Same text.")
    session.add_messages(
        [{"role": "system", "content": "Same text."}, {"role": "user", "content": "hi"}]
    )
    messages = session.build_request().messages
    assert [(m["role"], m["content"]) for m in messages] == [
        ("system", "Same text."),
        ("system", "Same text."),
        ("user", "hi"),
    ]


def test_a_view_is_a_snapshot_and_copy_message_shares_no_container():
    entries = [{"role": "user", "content": "a", "meta": {"tags": ["x"], "pair": (1, [2])}}]
    view = MessagesView(entries)
    entries.append({"role": "assistant", "content": "b"})
    assert len(view) == 1 and list(view) == entries[:1]
    copied = views.copy_message(entries[0])
    assert copied == entries[0]
    assert copied["meta"] is not entries[0]["meta"]
    assert copied["meta"]["tags"] is not entries[0]["meta"]["tags"]
    assert copied["meta"]["pair"][1] is not entries[0]["meta"]["pair"][1]  # deepcopy fallback
