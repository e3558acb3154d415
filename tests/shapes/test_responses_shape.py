"""OpenAI Responses API items in a session: converted once, kept whole, given back as sent.

Items are the real ``openai`` SDK's response types, dumped with ``model_dump()``.
"""

from __future__ import annotations

import pytest
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseReasoningItem,
)

from ctxengine_host.runtime.validity import ValidityError

USAGE = {"input_tokens": 10, "output_tokens": 2}


def reasoning(n: int) -> dict:
    return ResponseReasoningItem(
        id=f"rs_{n}",
        type="reasoning",
        summary=[{"type": "summary_text", "text": f"look at file {n}"}],
        encrypted_content=f"opaque-{n}",
    ).model_dump(exclude_none=True)


def call(n: int) -> dict:
    return ResponseFunctionToolCall(
        type="function_call",
        id=f"fc_{n}",
        call_id=f"call_{n}",
        name="read_file",
        arguments=f'{{"path": "f{n}.py"}}',
        status="completed",
    ).model_dump(exclude_none=True)


def answer(text: str) -> dict:
    return ResponseOutputMessage(
        id="msg_1",
        type="message",
        role="assistant",
        status="completed",
        content=[{"type": "output_text", "text": text, "annotations": []}],
    ).model_dump(exclude_none=True)


def output(n: int) -> dict:
    return {"type": "function_call_output", "call_id": f"call_{n}", "output": f"contents {n}"}


def play(session, steps: int = 2) -> list[dict]:
    """A tool loop in Responses items; returns every item in order."""
    user = {"role": "user", "content": "fix the bug"}
    session.add_messages([user])
    items = [user]
    for n in range(steps):
        response = [reasoning(n), call(n)]
        session.record_response(response, USAGE)
        session.record_tool_results([output(n)])
        items += [*response, output(n)]
    final = [answer("fixed")]
    session.record_response(final, USAGE)
    return items + final


def test_a_reasoning_item_and_its_call_are_one_assistant_message(make_host):
    session = make_host().open_session("s")
    play(session)
    assert session.shape == "responses"
    internal = session.messages()
    roles = [m["role"] for m in internal]
    assert roles == ["user", "assistant", "tool", "assistant", "tool", "assistant"]
    first = internal[1]
    assert first["tool_calls"][0]["id"] == "call_0"
    assert [i["type"] for i in first["ctxengine_source"]["items"]] == ["reasoning", "function_call"]
    chat = session.build_request().messages
    assert all("ctxengine_source" not in m for m in chat)
    assert chat[-1] == {"role": "assistant", "content": "fixed"}


def test_the_request_and_the_history_come_back_as_the_items_given(make_host):
    session = make_host().open_session("s", system_prompt="You are a coder.")
    items = play(session)
    kwargs = session.build_request().provider_kwargs()
    assert kwargs["instructions"] == "You are a coder."
    assert kwargs["input"] == items  # reasoning with its encrypted content, ids, statuses
    assert session.messages_in_shape() == items


def test_resumed_session_keeps_its_shape(make_host, tmp_path):
    store = tmp_path / "t.db"
    host = make_host(store_path=store)
    with host.open_session("s") as session:
        play(session, steps=1)
    again = make_host(store_path=store).open_session("s")
    assert again.shape == "responses"
    with pytest.raises(ValidityError, match="chat shape but this session uses the responses"):
        again.add_messages([{"role": "tool", "tool_call_id": "x", "content": "y"}])


def test_mixed_shapes_are_refused_and_nothing_is_stored(make_host):
    session = make_host().open_session("s")
    session.add_messages([{"type": "message", "role": "user", "content": "hi"}])
    anthropic_result = {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "x"}],
    }
    with pytest.raises(ValidityError, match="anthropic shape but this session uses the responses"):
        session.add_messages([anthropic_result])
    assert len(session.messages()) == 1


def test_a_declared_shape_wins_over_detection(make_host):
    session = make_host().open_session("s", shape="anthropic")
    with pytest.raises(ValidityError, match="responses shape but this session uses the anthropic"):
        session.add_messages([{"type": "message", "role": "user", "content": "hi"}])
    with pytest.raises(ValueError, match="unknown message shape 'gemini'"):
        make_host().open_session("t", shape="gemini")


def test_unsupported_item_types_are_named(make_host):
    session = make_host().open_session("s")
    with pytest.raises(ValidityError, match="item type 'web_search_call' is not supported"):
        session.add_messages([{"type": "web_search_call", "id": "ws_1", "status": "completed"}])
