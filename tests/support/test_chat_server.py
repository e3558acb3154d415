"""The scripted models' HTTP side answers as a provider does: the OpenAI SDK reads it."""

from __future__ import annotations

import json

import openai
import pytest

from tests.support.chat_server import ChatServer, ProviderError, usage


def _answer(body: dict, number: int) -> tuple[dict, dict[str, int]]:
    if body["messages"][-1]["role"] == "user":
        call = {"id": f"call_{number}", "type": "function"}
        call["function"] = {"name": "lcm_grep", "arguments": json.dumps({"pattern": "x"})}
        return {"tool_calls": [call]}, usage(11, 3)
    return {"content": f"done {number}"}, usage(20, 2)


def _client(server: ChatServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key="scripted", max_retries=0)


def test_a_tool_call_and_a_reply_read_back_by_the_sdk():
    with ChatServer(_answer) as server:
        first = _client(server).chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hi"}]
        )
        [call] = first.choices[0].message.tool_calls
        assert (call.id, call.function.name) == ("call_1", "lcm_grep")
        assert first.choices[0].finish_reason == "tool_calls"
        assert first.usage.total_tokens == 14
        second = _client(server).chat.completions.create(
            model="m", messages=[{"role": "tool", "tool_call_id": "call_1", "content": "r"}]
        )
        assert second.choices[0].message.content == "done 2"
        assert second.choices[0].finish_reason == "stop"


def test_the_streamed_form_carries_the_same_answer_and_its_usage():
    with ChatServer(_answer) as server:
        stream = _client(server).chat.completions.create(
            model="m",
            messages=[{"role": "user", "content": "hi"}],
            stream=True,
            stream_options={"include_usage": True},
        )
        chunks = list(stream)
    calls = [
        c for chunk in chunks for choice in chunk.choices for c in choice.delta.tool_calls or []
    ]
    assert [(c.index, c.function.name) for c in calls] == [(0, "lcm_grep")]
    assert [ch.choices[0].finish_reason for ch in chunks if ch.choices][-1] == "tool_calls"
    assert chunks[-1].usage.prompt_tokens == 11


def test_a_broken_script_is_a_server_error_not_a_hang():
    def broken(body: dict, number: int) -> tuple[dict, dict[str, int]]:
        raise ValueError("script bug")

    with (
        ChatServer(broken) as server,
        pytest.raises(openai.InternalServerError, match="script bug"),
    ):
        _client(server).chat.completions.create(model="m", messages=[])


def test_a_provider_refusal_reaches_the_sdk_with_its_status_and_code():
    def overflow(body: dict, number: int) -> tuple[dict, dict[str, int]]:
        raise ProviderError(400, {"message": "too long", "code": "context_length_exceeded"})

    with ChatServer(overflow) as server, pytest.raises(openai.BadRequestError) as caught:
        _client(server).chat.completions.create(model="m", messages=[])
    assert caught.value.status_code == 400 and caught.value.code == "context_length_exceeded"
