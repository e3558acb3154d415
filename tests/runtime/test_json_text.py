"""A dumper built once gives ``json.dumps``'s text exactly: message digests and stored
rows depend on every character."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime

import pytest

from ctxengine_host.json_text import flat_sorted_json, json_dumper

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


@pytest.mark.parametrize("ensure_ascii", [False, True])
@pytest.mark.parametrize("sort_keys", [False, True])
@pytest.mark.parametrize("value", VALUES, ids=range(len(VALUES)))
def test_a_dumper_gives_json_dumps_text(value, sort_keys, ensure_ascii):
    expected = json.dumps(value, ensure_ascii=ensure_ascii, default=str, sort_keys=sort_keys)
    assert json_dumper(sort_keys=sort_keys, ensure_ascii=ensure_ascii)(value) == expected


def test_a_dumper_is_reused_across_calls():
    dumps = json_dumper(sort_keys=True)
    for value in VALUES * 3:
        assert dumps(value) == json.dumps(value, ensure_ascii=False, default=str, sort_keys=True)


def test_a_key_that_is_not_text_fails_as_json_dumps_does():
    with pytest.raises(TypeError):
        json_dumper()({(1, 2): "tuple key"})


#: The values json.dumps writes without ``default=str``.
PLAIN = [v for v in VALUES if not (isinstance(v, dict) and "when" in v)]


@pytest.mark.parametrize("value", PLAIN, ids=range(len(PLAIN)))
def test_a_strict_dumper_gives_plain_json_dumps_text(value):
    assert json_dumper(ensure_ascii=True, strict=True)(value) == json.dumps(value)


def test_a_strict_dumper_refuses_what_json_has_no_type_for():
    with pytest.raises(TypeError, match="not JSON serializable"):
        json_dumper(strict=True)({"when": datetime(2026, 12, 3, tzinfo=UTC)})


def _general(mapping, skip=frozenset()):
    kept = {k: v for k, v in mapping.items() if k not in skip}
    return json.dumps(kept, ensure_ascii=False, default=str, sort_keys=True).encode()


#: Messages of text fields only: each takes the direct path.
FLAT = [
    {},
    {"role": "user", "content": "plain text", "message_uid": "u1"},
    {"role": "tool", "tool_call_id": "call_1", "content": None, "name": "shell"},
    {"content": 'zürich \u2028 "quoted" \\ back\nslash\ttab\r\n \U0001f600 \\"\\n', "role": "x"},
    {'k"ey': "v", "back\\slash": "\\", "new\nline": "\t", "é": "", "a b": "1", "a": "2"},
    {"z": "\x7f\x80\u0085", "\u00e9": "é", "e\u0301": "accent"},
]


@pytest.mark.parametrize("mapping", FLAT, ids=range(len(FLAT)))
def test_flat_sorted_json_is_the_encoders_text(mapping):
    skip = frozenset({"message_uid"})
    assert flat_sorted_json(mapping, skip) == _general(mapping, skip)


@pytest.mark.parametrize(
    "mapping",
    [
        {"content": "bell \x07"},
        {"content": "nul \x00"},
        {"content": "form feed \x0c and backspace \x08"},
        {"weight": 0.25},
        {"n": 1, "flag": True},
        {"tool_calls": [{"id": "c1"}]},
        {"content": [{"type": "text", "text": "hi"}]},
        {1: "int key"},
        {"content": "lone \ud800 surrogate"},
        {"content": type("Text", (str,), {})("a str subclass")},
    ],
)
def test_flat_sorted_json_leaves_any_other_shape_to_the_encoder(mapping):
    assert flat_sorted_json(mapping, frozenset()) is None


def test_flat_sorted_json_skips_fields_of_any_value():
    mapping = {"role": "user", "_absorbed_message_uids": ["a", "b"], "content": "x"}
    skip = frozenset({"_absorbed_message_uids"})
    assert flat_sorted_json(mapping, skip) == _general(mapping, skip)


def test_flat_sorted_json_on_random_texts():
    """Every character JSON escapes, and others around them, in keys and values."""
    rng = random.Random(17)
    alphabet = [chr(c) for c in range(0x30)] + list('"\\aZ é\u2028\U0001f600\x7f')
    for _ in range(3_000):
        mapping = {
            "".join(rng.choices(alphabet, k=rng.randint(0, 4))): rng.choice(
                [None, "".join(rng.choices(alphabet, k=rng.randint(0, 40)))]
            )
            for _ in range(rng.randint(0, 5))
        }
        text = flat_sorted_json(mapping, frozenset())
        if text is not None:
            assert text == _general(mapping)
        else:  # only a control character JSON writes as \b, \f or \u00XX sends it on
            joined = "".join(k + (v or "") for k, v in mapping.items())
            assert any(c < " " and c not in "\n\r\t" for c in joined)


@pytest.mark.parametrize("value", [v for v in VALUES if isinstance(v, dict)])
def test_a_transcript_row_body_is_json_dumps_text(value):
    """The transcript's body column is read back by every store and version: same text."""
    from ctxengine_host.stores.transcript import message_row_values

    message = {**value, "message_uid": "u9", "_tool_call_uid": "c1"}
    body = {k: v for k, v in message.items() if k not in ("message_uid", "_tool_call_uid")}
    row = message_row_values("s1", message, "d", "user", 0.0)
    assert row[3] == json.dumps(body, ensure_ascii=False, default=str)
