"""The gateway's AgentMessage ↔ our messages: nothing lost either way."""

from __future__ import annotations

import pytest

from ctxengine_host.gateway_bridge.shapes import (
    ORIGINAL_KEY,
    ShapeError,
    from_openai,
    is_context,
    to_openai,
    usage_of,
)

from .client import assistant, user

IMAGE = {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}


def _round_trip(message):
    converted = to_openai(message)
    wire = {k: v for k, v in converted.items()}
    return converted, from_openai(wire, {})


@pytest.mark.parametrize(
    "message",
    [
        user("hello"),
        {"role": "user", "content": [{"type": "text", "text": "look"}, IMAGE], "timestamp": 3},
        assistant("", calls=[("call_1", "read", {"path": "/a", "n": [1, 2]})]),
        {
            **assistant("thinking then text"),
            "content": [
                {"type": "thinking", "thinking": "hmm", "thinkingSignature": "sig"},
                {"type": "text", "text": "done"},
            ],
        },
        {
            "role": "toolResult",
            "toolCallId": "call_1",
            "toolName": "read",
            "content": [{"type": "text", "text": "file body"}, IMAGE],
            "details": {"bytes": 9},
            "isError": False,
            "timestamp": 4,
        },
        {"role": "compactionSummary", "summary": "earlier: x", "tokensBefore": 9, "timestamp": 5},
        {
            "role": "bashExecution",
            "command": "ls",
            "output": "a b",
            "exitCode": 0,
            "cancelled": False,
            "truncated": False,
            "timestamp": 6,
        },
    ],
)
def test_an_unchanged_message_comes_back_identical(message):
    converted, back = _round_trip(message)
    assert back == message
    assert converted[ORIGINAL_KEY] == message


def test_openai_view_of_tool_calls_results_and_images():
    call = to_openai(assistant("", calls=[("c1", "read", {"path": "/a"})]))
    assert call["tool_calls"] == [
        {
            "id": "c1",
            "type": "function",
            "function": {"name": "read", "arguments": '{"path": "/a"}'},
        }
    ]
    result = to_openai(
        {
            "role": "toolResult",
            "toolCallId": "c1",
            "toolName": "read",
            "content": [{"type": "text", "text": "ok"}, IMAGE],
            "isError": False,
            "timestamp": 1,
        }
    )
    assert result["role"] == "tool" and result["tool_call_id"] == "c1"
    assert result["content"][1] == {
        "type": "image_url",
        "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="},
    }


def test_a_changed_message_keeps_the_originals_metadata():
    original = {
        "role": "toolResult",
        "toolCallId": "c1",
        "toolName": "read",
        "content": [{"type": "text", "text": "x" * 500}],
        "isError": True,
        "details": {"k": 1},
        "timestamp": 77,
    }
    wire = to_openai(original)
    wire["content"] = "[truncated]"
    back = from_openai(wire, {})
    assert back == {**original, "content": [{"type": "text", "text": "[truncated]"}]}


def test_engine_written_messages_become_gateway_messages():
    summary = from_openai({"role": "system", "content": "Summary of turns 1-5"}, {})
    assert summary["role"] == "user" and summary["content"] == "Summary of turns 1-5"
    assert isinstance(summary["timestamp"], int)
    reply = from_openai(
        {
            "role": "assistant",
            "content": "hi",
            "tool_calls": [
                {"id": "c9", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}
            ],
        },
        {},
    )
    assert reply["content"] == [
        {"type": "text", "text": "hi"},
        {"type": "toolCall", "id": "c9", "name": "f", "arguments": {"a": 1}},
    ]
    assert reply["stopReason"] == "toolUse" and reply["usage"]["totalTokens"] == 0
    result = from_openai({"role": "tool", "tool_call_id": "c9", "content": "r"}, {"c9": "f"})
    assert result["toolName"] == "f" and result["toolCallId"] == "c9"


def test_bad_messages_are_refused_with_the_reason():
    with pytest.raises(ShapeError, match="unknown role 'robot'"):
        to_openai({"role": "robot"})
    with pytest.raises(ShapeError, match="toolCallId"):
        to_openai({"role": "toolResult", "content": []})
    with pytest.raises(ShapeError, match="not an AgentMessage"):
        to_openai("hello")


def test_excluded_custom_messages_are_not_context_and_usage_converts():
    assert not is_context({"role": "custom", "excludeFromContext": True})
    assert is_context(user("x"))
    assert usage_of(assistant("a", prompt_tokens=300)) == {
        "prompt_tokens": 300,
        "completion_tokens": 20,
        "total_tokens": 320,
    }
