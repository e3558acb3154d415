"""Anthropic Messages in a session: tool_use / tool_result pair across the user message,
thinking blocks travel with their signatures, the caller gets its messages back.

Assistant messages are the real ``anthropic`` SDK's ``Message`` objects dumped with
``model_dump()``.
"""

from __future__ import annotations

import pytest
from anthropic.types import Message, TextBlock, ThinkingBlock, ToolUseBlock, Usage
from pg.fixtures import fresh_schema_url

from ctxengine_host.runtime.validity import ValidityError

USAGE = {"input_tokens": 10, "output_tokens": 2}


def assistant_turn(n: int) -> dict:
    message = Message(
        id=f"msg_{n}",
        type="message",
        role="assistant",
        model="claude-test",
        stop_reason="tool_use",
        usage=Usage(input_tokens=1, output_tokens=1),
        content=[
            ThinkingBlock(type="thinking", thinking=f"need file {n}", signature=f"sig{n}"),
            TextBlock(type="text", text=f"Reading f{n}.py."),
            ToolUseBlock(type="tool_use", id=f"toolu_{n}", name="read_file", input={"n": n}),
            ToolUseBlock(type="tool_use", id=f"toolu_{n}b", name="grep", input={"q": "x"}),
        ],
    )
    return message.model_dump(exclude_none=True)


def results(n: int, note: str | None = None) -> dict:
    blocks = [
        {"type": "tool_result", "tool_use_id": f"toolu_{n}", "content": f"contents of f{n}"},
        {
            "type": "tool_result",
            "tool_use_id": f"toolu_{n}b",
            "content": [{"type": "text", "text": "no match"}],
            "is_error": True,
        },
    ]
    if note:
        blocks.append({"type": "text", "text": note})
    return {"role": "user", "content": blocks}


def play(session, steps: int = 2) -> list[dict]:
    first = {"role": "user", "content": "fix the bug"}
    session.add_messages([first])
    given = [first]
    for n in range(steps):
        reply = assistant_turn(n)
        session.record_response(reply, USAGE)
        answer = results(n, note="keep going" if n == 0 else None)
        session.record_tool_results([answer])
        given += [reply, answer]
    return given


def test_tool_results_become_tool_messages_right_after_their_call(make_host):
    session = make_host().open_session("s")
    play(session)
    assert session.shape == "anthropic"
    chat = session.build_request().messages
    roles = [m["role"] for m in chat]
    assert roles == ["user", "assistant", "tool", "tool", "user", "assistant", "tool", "tool"]
    assert [c["id"] for c in chat[1]["tool_calls"]] == ["toolu_0", "toolu_0b"]
    assert chat[1]["content"] == "Reading f0.py."
    assert chat[3] == {"role": "tool", "tool_call_id": "toolu_0b", "content": "no match"}
    assert chat[4] == {"role": "user", "content": "keep going"}


def test_the_request_is_the_callers_messages_with_thinking_signatures(make_host):
    session = make_host().open_session("s", system_prompt="Be careful.")
    given = play(session)
    kwargs = session.build_request().provider_kwargs()
    assert kwargs["system"] == "Be careful."
    expected = [{"role": m["role"], "content": m["content"]} for m in given]
    assert kwargs["messages"] == expected
    assert kwargs["messages"][1]["content"][0] == {
        "type": "thinking",
        "thinking": "need file 0",
        "signature": "sig0",
    }
    assert session.messages_in_shape() == given  # the dumped Message, id and usage included


def test_a_message_changed_by_an_engine_is_converted_from_its_chat_form(make_host):
    from ctxengine_host.shapes import to_provider

    session = make_host().open_session("s")
    play(session, steps=1)
    internal = session.messages()
    internal[2]["content"] = "[output truncated]"  # what an engine's rewrite looks like
    converted = to_provider(internal, [], "anthropic")["messages"]
    assert converted[1]["content"][0]["type"] == "thinking"  # the assistant is intact
    assert converted[2]["content"][0] == {
        "type": "tool_result",
        "tool_use_id": "toolu_0",
        "content": [{"type": "text", "text": "[output truncated]"}],
    }
    assert converted[2]["content"][-1] == {"type": "text", "text": "keep going"}


def test_a_tool_use_without_results_is_refused_before_the_next_user_message(make_host):
    session = make_host().open_session("s")
    session.add_messages([{"role": "user", "content": "go"}])
    session.record_response(assistant_turn(0), USAGE)
    with pytest.raises(ValidityError, match="unanswered"):
        session.add_messages([{"role": "user", "content": [{"type": "text", "text": "hm"}]}])


def test_unknown_block_types_are_named(make_host):
    session = make_host().open_session("s", shape="anthropic")
    with pytest.raises(ValidityError, match="block type 'mystery' is not supported"):
        session.add_messages([{"role": "user", "content": [{"type": "mystery"}]}])


@pytest.mark.postgres
def test_originals_survive_the_postgresql_store_and_a_restart(make_host, pg_database):
    store = fresh_schema_url(pg_database)
    with make_host(store_path=store).open_session("s", system_prompt="Be careful.") as session:
        given = play(session)
    again = make_host(store_path=store).open_session("s")
    assert again.shape == "anthropic"
    assert again.messages_in_shape() == given
    expected = [{"role": m["role"], "content": m["content"]} for m in given]
    assert again.build_request().provider_kwargs()["messages"] == expected


def test_a_resent_message_with_its_uid_is_a_retry(make_host):
    session = make_host().open_session("s")
    first = {"role": "user", "content": [{"type": "text", "text": "go"}], "message_uid": "u-1"}
    session.add_messages([first])
    session.add_messages([first])  # a gateway re-sending the turn after a crash
    assert len(session.messages()) == 1
    assert session.messages()[0]["message_uid"] == "u-1"
