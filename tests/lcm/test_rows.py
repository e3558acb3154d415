"""A message's stored columns (``render.to_new_message``): what ingest writes for every
shape, pinned column by column (the stored rows of earlier versions hold these)."""

from __future__ import annotations

import pytest

from ctxengine_host.tokens import message_digest
from ctxengine_lcm.render import to_new_message

CALL = {
    "id": "c1",
    "type": "function",
    "function": {"name": "shell", "arguments": '{"cmd": "ls"}'},
}

# (message, content, extra_json, tool_call_id, tool_name)
SHAPES = [
    (
        {"role": "user", "content": "hello", "message_uid": "u1"},
        "hello",
        '{"role": "user", "message_uid": "u1"}',
        None,
        None,
    ),
    (
        {"role": "assistant", "content": "hi", "name": "helper"},
        "hi",
        '{"role": "assistant", "name": "helper"}',
        None,
        "helper",
    ),
    (
        {"role": "tool", "content": "out", "tool_call_id": "call_1", "name": ""},
        "out",
        '{"role": "tool", "tool_call_id": "call_1", "name": ""}',
        "call_1",
        None,
    ),
    (
        {
            "role": "assistant",
            "content": None,
            "name": "n",
            "tool_calls": [CALL, {"function": {"name": "read"}}],
        },
        "shell cmd: ls\nread",
        '{"role": "assistant", "content": null, "name": "n", "tool_calls": [{"id": "c1", '
        '"type": "function", "function": {"name": "shell", "arguments": "{\\"cmd\\": '
        '\\"ls\\"}"}}, {"function": {"name": "read"}}]}',
        None,
        "shell,read",
    ),
    (
        {
            "role": "assistant",
            "content": None,
            "name": "fallback",
            "tool_calls": [{"function": {"name": ""}}, "junk", {"function": 3}],
        },
        "",
        '{"role": "assistant", "content": null, "name": "fallback", "tool_calls": '
        '[{"function": {"name": ""}}, "junk", {"function": 3}]}',
        None,
        "fallback",
    ),
    (
        {"role": 3, "content": [{"type": "text", "text": "t"}], "name": 7, "tool_call_id": 5},
        "t",
        '{"role": 3, "content": [{"type": "text", "text": "t"}], "name": 7, "tool_call_id": 5}',
        None,
        None,
    ),
]


@pytest.mark.parametrize(("message", "content", "extra", "call_id", "tool_name"), SHAPES)
def test_a_messages_columns(message, content, extra, call_id, tool_name):
    row = to_new_message(message, "u", 5, 1.0, None)
    assert row.message_uid == "u" and row.role == str(message["role"])
    assert (row.content, row.extra_json) == (content, extra)
    assert (row.tool_call_id, row.tool_name) == (call_id, tool_name)
    assert (row.token_count, row.context_tokens, row.externalized, row.created_at) == (
        5,
        5,
        False,
        1.0,
    )
    assert row.digest == message_digest(message)


def test_a_large_output_costs_its_stub_in_context():
    row = to_new_message({"role": "tool", "content": "x" * 99}, "u", 500, 2.0, 12)
    assert (row.token_count, row.context_tokens, row.externalized, row.created_at) == (
        500,
        12,
        True,
        2.0,
    )
