"""Bad input: clear errors naming the fix, or the documented repair; nothing stored on error."""

from __future__ import annotations

import pytest

from ctxengine_host.contract.messages import well_formed
from ctxengine_host.contract.usage import UsageError, normalize_usage
from ctxengine_host.runtime.session import BudgetError
from ctxengine_host.runtime.validity import (
    MISSING_RESULT_TEXT,
    ValidityError,
    repair,
    sequence_problems,
)
from ctxengine_host.tokens import message_digest, versioned

from .driver import tool_call
from .engines import QuietEngine

USAGE = {"prompt_tokens": 10, "completion_tokens": 1}


@pytest.fixture
def session(make_host):
    return make_host(QuietEngine()).open_session("s")


@pytest.mark.parametrize(
    ("messages", "needle"),
    [
        (["hello"], "not a dict"),
        ([{"role": "robot", "content": "x"}], "unknown role 'robot'"),
        ([{"content": "no role"}], "unknown role None"),
        ([{"role": "tool", "tool_call_id": "c9", "content": "x"}], "does not answer a call"),
        ([{"role": "tool", "content": "x"}], "without a string 'tool_call_id'"),
        ([{"role": "user", "content": "a", "tool_calls": []}], "only assistants call tools"),
        (
            [{"role": "user", "content": "a"}, {"role": "system", "content": "late"}],
            "allowed only at the start",
        ),
        (
            [{"role": "user", "content": "a", "message_uid": "u" * 300}],
            r"'message_uid' 'uuuu.* has 300 characters",
        ),
        ([{"role": "user", "content": "a", "message_uid": "a\x00b"}], "holds a NUL"),
        ([{"role": "user", "content": "a", "_tool_call_uid": "a\x00b"}], "holds a NUL"),
    ],
)
def test_bad_messages_are_rejected_and_nothing_is_stored(session, messages, needle):
    with pytest.raises(ValidityError, match=needle):
        session.add_messages(messages)
    assert session.host.store.rows("s") == []


def test_unanswered_calls_block_the_next_message_and_request(session):
    session.add_user_message("go")
    session.record_response(
        {"role": "assistant", "content": None, "tool_calls": [tool_call("c1", "x")]}, USAGE
    )
    with pytest.raises(ValidityError, match="c1 are unanswered"):
        session.build_request()
    with pytest.raises(ValidityError, match="record their tool results first"):
        session.add_user_message("and?")


def test_a_request_needs_a_user_message(session):
    with pytest.raises(ValidityError, match="no user message"):
        session.build_request()


def test_repair_keeps_all_user_content(session):
    session.add_user_message("first")
    session.record_response(
        {"role": "assistant", "content": None, "tool_calls": [tool_call("c1", "x")]}, USAGE
    )
    session.add_messages(
        [
            {"role": "tool", "tool_call_id": "zz", "content": "stray output"},
            {"role": "system", "content": "late rule"},
            {"role": "user", "content": "more"},
        ],
        repair_input=True,
    )
    roles = [(m["role"], m.get("content")) for m in session.messages()]
    assert roles[2:] == [
        ("tool", MISSING_RESULT_TEXT),
        ("user", "[tool result for call zz] stray output"),
        ("user", "[system] late rule"),
        ("user", "more"),
    ]
    assert sequence_problems(session.messages()) == []


def test_repair_refuses_to_guess_non_dicts():
    with pytest.raises(ValidityError, match="not a dict"):
        repair(["text"])


def test_strict_alternation_merge_records_absorbed_uids():
    merged = repair(
        [
            {"role": "user", "content": "A", "message_uid": "a" * 32},
            {"role": "user", "content": "B", "message_uid": "b" * 32},
        ],
        strict_alternation=True,
    )
    assert merged == [
        {
            "role": "user",
            "content": "A\n\nB",
            "message_uid": "a" * 32,
            "_absorbed_message_uids": ["b" * 32],
        }
    ]
    assert sequence_problems(merged, strict_alternation=True) == []
    assert sequence_problems(merged * 2, strict_alternation=True)


@pytest.mark.parametrize(
    ("usage", "needle"),
    [
        ("lots", "not a dict"),
        ({"completion_tokens": 3}, "no 'prompt_tokens'"),
        ({"prompt_tokens": -1, "completion_tokens": 3}, "negative"),
        ({"prompt_tokens": "12", "completion_tokens": 3}, "non-negative integer"),
        ({"prompt_tokens": True, "completion_tokens": 3}, "non-negative integer"),
        ({"prompt_tokens": 1.5, "completion_tokens": 3}, "whole numbers"),
        ({"prompt_tokens": 1, "completion_tokens": 3, "total_tokens": -4}, "negative"),
    ],
)
def test_bad_usage_is_a_clear_error_and_stores_nothing(session, usage, needle):
    session.add_user_message("hi")
    with pytest.raises(UsageError, match=needle):
        session.record_response({"role": "assistant", "content": "x"}, usage)
    assert len(session.host.store.rows("s")) == 1


def test_usage_repairs():
    assert normalize_usage({"input_tokens": 7, "output_tokens": 2.0}) == {
        "input_tokens": 7,
        "output_tokens": 2.0,
        "prompt_tokens": 7,
        "completion_tokens": 2,
        "total_tokens": 9,
    }


def test_missing_usage_is_estimated(session):
    session.add_user_message("hi")
    request = session.build_request()
    session.record_response({"content": "x"}, None)
    report = session.finish_turn()
    assert report.usage["estimated"] is True
    assert report.usage["prompt_tokens"] == request.estimated_tokens
    assert session.messages()[-1]["role"] == "assistant"


def test_record_response_refuses_other_roles(session):
    session.add_user_message("hi")
    with pytest.raises(ValidityError, match="use add_messages"):
        session.record_response({"role": "user", "content": "x"}, USAGE)


def test_budget_smaller_than_the_system_prompt(make_host):
    host = make_host(QuietEngine(), context_length=300, reserve=200)
    with pytest.raises(BudgetError, match="shorten the system prompt"):
        host.open_session("s", system_prompt="word " * 200)


def test_bad_session_ids_and_types(make_host):
    host = make_host(QuietEngine())
    with pytest.raises(ValueError, match="invalid session id"):
        host.open_session("../etc/passwd")
    with pytest.raises(TypeError, match="tools must be a list"):
        host.open_session("ok", tools={"name": "x"})
    with pytest.raises(ValueError, match="context_length must be a positive integer"):
        make_host(QuietEngine(), context_length=-5)


@pytest.mark.parametrize("prompt", ["You are\x00 a bot", "You are \ud83d a bot"])
def test_a_system_prompt_no_store_keeps_is_refused_when_the_session_opens(make_host, prompt):
    """The session's store keeps its system prompt as given: PostgreSQL's text cannot hold
    a NUL (psycopg's DataError when the session opened there, where SQLite kept it) and
    UTF-8 no half of a character; the prompt is refused on both, before anything is
    stored."""
    host = make_host(QuietEngine())
    with pytest.raises(ValueError, match="system_prompt holds a NUL character or half"):
        host.open_session("s", system_prompt=prompt)
    assert host.open_session("s", system_prompt="You are a bot").session_id == "s"


def test_a_single_dict_instead_of_a_list_is_named(session):
    with pytest.raises(ValidityError, match="wrap a single message in a list"):
        session.add_messages({"role": "user", "content": "hi"})


def test_unstorable_text_is_a_clear_error(session):
    deep: dict = {}
    node = deep
    for _ in range(5000):
        node["x"] = {}
        node = node["x"]
    with pytest.raises(ValidityError, match="cannot be stored as JSON"):
        session.add_messages([{"role": "user", "content": "hi", "metadata": deep}])
    assert session.host.store.rows("s") == []
    session.add_user_message("still fine")
    assert len(session.messages()) == 1


def test_half_of_a_character_is_stored_and_sent_as_a_replacement_character(session, caplog):
    """A tool that truncates by UTF-16 units cuts an emoji in two (real Claude Code session
    files hold such a ``\\ud83d``): UTF-8 cannot encode it and providers refuse it. The
    message is kept with U+FFFD in its place, said in a warning; the same message sent
    again is known (its digest is the repaired one's), not stored twice."""
    call = {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
    history = [
        {"role": "user", "content": "list the tags", "message_uid": "u1"},
        {"role": "assistant", "content": "", "tool_calls": [call], "message_uid": "u2"},
        {"role": "tool", "tool_call_id": "c1", "content": "tags: \U0001f525 \ud83d…",
         "message_uid": "u3"},
    ]  # fmt: skip
    session.add_messages(history)
    assert "1 lone UTF-16 surrogate" in caplog.text
    sent = session.build_request().messages[-1]["content"]
    assert sent == "tags: \U0001f525 \ufffd…"
    sent.encode("utf-8")
    session.add_messages(history)  # a retry of the same turn
    assert len(session.host.store.rows("s")) == 3


@pytest.mark.parametrize(
    ("text", "repaired", "found"),
    [
        ("cut \ud83d", "cut \ufffd", 1),  # the high half alone
        ("\udc00 low", "\ufffd low", 1),
        ("pair \ud83d\ude00 as two code points", "pair \U0001f600 as two code points", 2),
        ("whole \U0001f600 and \ufffd", "whole \U0001f600 and \ufffd", 0),
    ],
)
def test_well_formed_replaces_or_joins_halves_and_keeps_the_digest(text, repaired, found):
    message = {"role": "user", "content": [{"type": "text", "text": text}], "tags": (text,)}
    fixed, count = well_formed(message)
    assert count == 2 * found and fixed["content"][0]["text"] == repaired == fixed["tags"][0]
    assert (fixed is message) == (found == 0)
    digest, kept = versioned(message)
    assert kept == fixed and digest == message_digest(fixed)
