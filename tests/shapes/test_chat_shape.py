"""Every valid OpenAI Chat Completions message is accepted, stored, sent and returned.

Messages are built with the real ``openai`` SDK's pydantic types and ``model_dump()``
(what an agent loop stores), so the shapes are the SDK's, not our guess.
"""

from __future__ import annotations

import logging

import pytest
from openai.types.chat import ChatCompletionMessage, ChatCompletionMessageToolCall

from ctxengine_host.runtime.validity import ValidityError
from ctxengine_host.shapes import parts
from ctxengine_host.shapes.images import IMAGE_BASE_TOKENS, IMAGE_WORST_CASE_TOKENS

USAGE = {"prompt_tokens": 10, "completion_tokens": 2}


def sdk_text_answer(text: str) -> dict:
    return ChatCompletionMessage(role="assistant", content=text).model_dump()


def sdk_tool_call(call_id: str, name: str, arguments: str) -> dict:
    call = ChatCompletionMessageToolCall(
        id=call_id, type="function", function={"name": name, "arguments": arguments}
    )
    return ChatCompletionMessage(role="assistant", content=None, tool_calls=[call]).model_dump()


def test_sdk_model_dump_with_null_fields_is_accepted_and_sent_clean(make_host):
    answer = sdk_text_answer("done")
    assert answer["tool_calls"] is None and answer["function_call"] is None  # the SDK's dump
    session = make_host().open_session("s")
    session.add_user_message("hi")
    session.record_response(sdk_tool_call("call_1", "grep", '{"q": "x"}'), USAGE)
    session.record_tool_results([{"role": "tool", "tool_call_id": "call_1", "content": "hit"}])
    session.record_response(answer, USAGE)
    session.add_messages([{"role": "user", "content": "more", "tool_calls": None}])
    sent = session.build_request().messages
    assert sent[-2] == {"role": "assistant", "content": "done"}
    assert all(v is not None for m in sent for k, v in m.items() if k != "content")
    assert not any(key in m for m in sent for key in ("function_call", "annotations", "audio"))


def test_empty_tool_calls_list_on_an_answer_is_a_plain_answer(make_host):
    session = make_host().open_session("s")
    session.add_user_message("hi")
    session.record_response({"role": "assistant", "content": "ok", "tool_calls": []}, USAGE)
    session.add_user_message("next")  # no open calls: the [] was no call at all
    assert session.build_request().messages[-2] == {"role": "assistant", "content": "ok"}


def test_developer_role_is_a_system_level_message(make_host):
    session = make_host().open_session("s")
    session.add_messages(
        [
            {"role": "developer", "content": "Answer in French."},
            {"role": "user", "content": "hi"},
        ]
    )
    assert session.build_request().messages[0]["role"] == "developer"
    with pytest.raises(ValidityError, match="developer message after the conversation started"):
        session.add_messages([{"role": "developer", "content": "late"}])
    session.add_messages([{"role": "developer", "content": "late"}], repair_input=True)
    assert session.messages()[-1]["role"] == "user"
    assert session.messages()[-1]["content"] == "[system] late"


def test_legacy_function_call_pairs_and_comes_back_as_given(make_host):
    call = {"role": "assistant", "content": None, "function_call": {"name": "f", "arguments": "{}"}}
    result = {"role": "function", "name": "f", "content": "42"}
    session = make_host().open_session("s")
    session.add_user_message("run f")
    session.record_response(call, USAGE)
    session.record_tool_results([result])
    sent = session.build_request().messages
    assert sent[-2]["tool_calls"][0]["function"] == {"name": "f", "arguments": "{}"}
    assert sent[-1] == {"role": "tool", "tool_call_id": "function_call", "content": "42"}
    assert session.messages_in_shape()[-2:] == [call, result]


def test_refusal_name_and_audio_are_sent_the_way_the_api_takes_them(make_host):
    session = make_host().open_session("s")
    session.add_messages([{"role": "user", "content": "hi", "name": "alice"}])
    audio = {"id": "audio_1", "data": "UklGRg==", "expires_at": 1, "transcript": "hello there"}
    session.record_response(
        {"role": "assistant", "content": None, "refusal": "I can't", "audio": audio}, USAGE
    )
    sent = session.build_request().messages
    assert sent[-2] == {"role": "user", "content": "hi", "name": "alice"}
    assert sent[-1] == {
        "role": "assistant",
        "content": None,
        "refusal": "I can't",
        "audio": {"id": "audio_1"},
    }
    assert session.messages_in_shape()[-1]["audio"] == audio  # the store keeps all of it


def test_unknown_fields_are_kept_returned_not_sent_and_warned_once(make_host, caplog):
    session = make_host().open_session("s")
    caplog.set_level(logging.WARNING, logger="ctxengine.runtime")
    for n in range(5):
        session.add_messages([{"role": "user", "content": f"q{n}", "x_trace": n}])
        session.record_response({"role": "assistant", "content": "a", "x_trace": n}, USAGE)
    warnings = [r for r in caplog.records if "x_trace" in r.getMessage()]
    assert len(warnings) == 1
    assert all("x_trace" not in m for m in session.build_request().messages)
    assert [m["x_trace"] for m in session.messages_in_shape()] == [0, 0, 1, 1, 2, 2, 3, 3, 4, 4]
    assert session.messages()[0]["x_trace"] == 0


def test_unknown_fields_go_to_the_provider_when_the_caller_allows_it(make_host):
    session = make_host().open_session("s", send_unknown_fields=True)
    session.add_messages([{"role": "user", "content": "q", "x_trace": 1, "timestamp": 5}])
    assert session.build_request().messages[-1] == {"role": "user", "content": "q", "x_trace": 1}


@pytest.mark.parametrize(
    ("part", "expected"),
    [
        (
            {"type": "image_url", "image_url": {"url": "https://x/y.png"}},
            IMAGE_WORST_CASE_TOKENS,  # a remote URL: the worst case of detail "auto"
        ),
        (
            {"type": "image_url", "image_url": {"url": "https://x/y.png", "detail": "low"}},
            IMAGE_BASE_TOKENS,
        ),
        # 48,000 bytes of WAV = one second = 10 tokens
        ({"type": "input_audio", "input_audio": {"data": "A" * 64_000, "format": "wav"}}, 10),
        ({"type": "file", "file": {"file_data": "data:application/pdf;base64," + "A" * 400}}, 75),
        ({"type": "file", "file": {"file_id": "file-1"}}, parts.FILE_REFERENCE_TOKENS),
    ],
)
def test_every_content_part_type_is_counted(make_host, part, expected):
    host = make_host()
    counter = host.counter
    text_only = {"role": "user", "content": [{"type": "text", "text": "look"}]}
    with_part = {"role": "user", "content": [{"type": "text", "text": "look"}, part]}
    assert counter.count_message(with_part) - counter.count_message(text_only) == expected
    session = host.open_session("s")
    session.add_messages([with_part])
    assert session.build_request().messages[-1] == with_part


def test_refusal_text_is_counted(make_host):
    counter = make_host().counter
    plain = {"role": "assistant", "content": None}
    refused = {"role": "assistant", "content": None, "refusal": "I cannot help with that"}
    assert counter.count_message(refused) > counter.count_message(plain)
