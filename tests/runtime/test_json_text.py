"""A dumper built once gives ``json.dumps``'s text exactly: message digests and stored
rows depend on every character."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from ctxengine_host.json_text import json_dumper

VALUES = [
    {"role": "user", "content": "plain text", "message_uid": "u1"},
    {"content": 'zürich \u2028 "quoted" \\ back\nslash\ttab \x00 \U0001f600', "role": "tool"},
    {"b": [1, 2.5, -0.0, 1e300, True, False, None], "a": {"z": 1, "y": {"x": []}}},
    {"floats": [float("nan"), float("inf"), float("-inf"), 0.1 + 0.2]},
    {2.5: "float key", 1: "int key", False: "bool key"},
    {"when": datetime(2026, 12, 3, tzinfo=UTC), "set": {1}},  # default=str
    "a top-level string",
    [{"k": "v"}, "x", 3],
    7,
]


@pytest.mark.parametrize("sort_keys", [False, True])
@pytest.mark.parametrize("value", VALUES, ids=range(len(VALUES)))
def test_a_dumper_gives_json_dumps_text(value, sort_keys):
    expected = json.dumps(value, ensure_ascii=False, default=str, sort_keys=sort_keys)
    assert json_dumper(sort_keys=sort_keys)(value) == expected


def test_a_dumper_is_reused_across_calls():
    dumps = json_dumper(sort_keys=True)
    for value in VALUES * 3:
        assert dumps(value) == json.dumps(value, ensure_ascii=False, default=str, sort_keys=True)


def test_a_key_that_is_not_text_fails_as_json_dumps_does():
    with pytest.raises(TypeError):
        json_dumper()({(1, 2): "tuple key"})


@pytest.mark.parametrize("value", [v for v in VALUES if isinstance(v, dict)])
def test_a_transcript_row_body_is_json_dumps_text(value):
    """The transcript's body column is read back by every store and version: same text."""
    from ctxengine_host.stores.transcript import message_row_values

    message = {**value, "message_uid": "u9", "_tool_call_uid": "c1"}
    body = {k: v for k, v in message.items() if k not in ("message_uid", "_tool_call_uid")}
    row = message_row_values("s1", message, "d", "user", 0.0)
    assert row[3] == json.dumps(body, ensure_ascii=False, default=str)
