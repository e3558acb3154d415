"""Summarizer faults from a local fake OpenAI server, each ending in its documented outcome.

The outcomes are docs/summarizer.md's response table and escalation rules:
transient failures (timeouts, HTTP 5xx, 429 rate limits) are retried with backoff,
honouring Retry-After, and a recovered call succeeds; 401, a 429 ``insufficient_quota``,
an empty answer, a spent retry budget or a Retry-After beyond the configured maximum
raise ``SummarizerError`` at once; an answer longer than its input escalates to level 1,
then to the level-2 truncation, which always fits. Through the runtime, a
``SummarizerError`` aborts that compaction only: the turn completes, the transcript and
the live view are kept, nothing is quarantined.
"""

from __future__ import annotations

import sqlite3

import pytest

from ctxengine_host.config import CompressionSection, CtxConfig, LoadedConfig, SummarizerSection
from ctxengine_host.runtime.isolation import is_quarantined
from ctxengine_host.stores.quarantine import QuarantineLog
from ctxengine_host.summarizer import SummarizerError, SummarizerService
from ctxengine_host.tokens import TokenCounter

from .fake_openai import FakeOpenAI, Reply, quota_exhausted, rate_limited

KEY_ENV = "CTXENGINE_TEST_SUMMARY_KEY"
COUNTER = TokenCounter("gpt-4")
CONVERSATION = [
    {"role": "user" if i % 2 == 0 else "assistant",
     "content": f"step {i}: we changed config value port={8000 + i} in service{i}.toml " * 3}
    for i in range(12)
]  # fmt: skip
TARGET = 60
LONG = "an endless summary that repeats itself " * 400


def settings(base_url: str, **overrides: object) -> dict:
    return {
        "backend": "openai",
        "base_url": base_url,
        "model": "fake-summarizer",
        "api_key_env": KEY_ENV,
        "timeout_seconds": 0.8,
        "max_retries": 2,
        "backoff_initial_seconds": 0.01,
        "backoff_max_seconds": 0.02,
        "max_retry_after_seconds": 1.0,
        **overrides,
    }


@pytest.fixture(autouse=True)
def api_key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, "sk-test-local")


#: (case, script, expected requests, error substring or None for success, expected level)
CASES = [
    ("timeout, then an answer", [Reply(delay=1.2), Reply()], 2, None, 0),
    ("timeout every time", [Reply(delay=1.2)], 3, "gave up after 3 attempts", None),
    ("429 rate limit, then an answer", [rate_limited("0"), Reply()], 2, None, 0),
    ("429 rate limit every time", [rate_limited("0")], 3, "gave up after 3 attempts", None),
    ("429 Retry-After beyond the maximum", [rate_limited("120")], 1, "rate limited for", None),
    ("429 insufficient_quota", [quota_exhausted(), Reply()], 1, "quota is exhausted", None),
    ("500, then an answer", [Reply(500), Reply()], 2, None, 0),
    ("500 every time", [Reply(500)], 3, "HTTP 500", None),
    ("401", [Reply(401, error={"message": "Bad API key"}), Reply()], 1, "check the key", None),
    ("empty output", [Reply(text="   ")], 1, "empty summary", None),
    ("output longer than the input", [Reply(text=LONG)], 2, None, 2),
]  # fmt: skip


@pytest.mark.parametrize(
    ("case", "script", "requests", "error", "level"), CASES, ids=[c[0] for c in CASES]
)
def test_each_summarizer_fault_has_its_documented_outcome(
    case, script, requests, error, level, figures
):
    with FakeOpenAI(script) as server:
        service = SummarizerService(settings(server.base_url), COUNTER)
        if error:
            with pytest.raises(SummarizerError, match=error):
                service.summarize(CONVERSATION, TARGET)
            assert service.stats["errors"] == 1
        else:
            result = service.summarize(CONVERSATION, TARGET)
            assert result.level == level
            assert 0 < result.output_tokens <= TARGET
            assert result.output_tokens < result.input_tokens
        assert len(server.requests) == requests
        assert server.requests[0]["auth"] == "Bearer sk-test-local"
        assert server.requests[0]["path"] == "/v1/chat/completions"
    figures("fault", method="summarizer", fault=case, survived=True)


def _host(make_host, base_url: str, engine: str = "legacy", tmp_path=None):
    cfg = CtxConfig(
        compression=CompressionSection(hook_timeout_seconds=5, context_timeout_seconds=10),
        summarizer=SummarizerSection(**settings(base_url)),
    )
    if engine == "lcm":  # a short fresh tail, so the history has something to summarize
        cfg.engines["lcm"] = {"database": str(tmp_path / "lcm.db"), "fresh_tail_messages": 4}
    cfg.context.reserve_output_tokens = 256
    host = make_host(engine, cfg=LoadedConfig(config=cfg), context_length=4096)
    assert host.engine_name == engine
    return host


def _fill(session) -> None:
    for i in range(14):
        session.add_user_message(f"request {i}: " + "please look at module alpha beta gamma " * 12)
        session.record_response({"role": "assistant", "content": f"done {i} " * 30}, None)


@pytest.mark.parametrize("engine", ["legacy", "lcm"])
@pytest.mark.parametrize(
    ("case", "script"),
    [
        ("401", [Reply(401, error={"message": "bad key"})]),
        ("429 insufficient_quota", [quota_exhausted()]),
        ("empty output", [Reply(text="")]),
        ("timeout every time", [Reply(delay=1.2)]),
    ],
)
def test_a_summarizer_failing_for_good_aborts_only_that_compaction(
    case, script, engine, make_host, tmp_path, figures
):
    with FakeOpenAI(script) as server:
        host = _host(make_host, server.base_url, engine, tmp_path)
        session = host.open_session("s")
        _fill(session)
        rows = [r.message for r in host.store.rows("s")]
        live = session.messages()
        event = session.compact(focus_topic="alpha")
        assert server.requests, "the engine never asked the summarizer"
        assert event is not None and not event.ok and not event.compacted
        assert "summarizer" in (event.detail or "").lower()
        assert session.messages() == live, "the live view must be kept"
        assert [r.message for r in host.store.rows("s")] == rows
        assert QuarantineLog().records() == [] and not is_quarantined(engine)
        if engine == "lcm":  # nothing half-written in the engine's own store either
            with sqlite3.connect(tmp_path / "lcm.db") as conn:
                assert conn.execute("SELECT COUNT(*) FROM summaries").fetchone() == (0,)
        session.add_user_message("still there?")
        assert session.build_request().messages[-1]["content"] == "still there?"
        report = session.finish_turn()
        assert report.mode == "normal"
    figures("fault", method=f"summarizer-in-{engine}", fault=case, survived=True)


def test_a_rate_limited_summarizer_recovers_and_the_compaction_succeeds(make_host):
    with FakeOpenAI([rate_limited("0"), Reply(text="- alpha module reviewed")]) as server:
        host = _host(make_host, server.base_url)
        session = host.open_session("s")
        _fill(session)
        before = len(session.messages())
        event = session.compact()
        assert event is not None and event.ok and event.compacted
        assert event.summary_levels == [0]
        assert len(session.messages()) < before
        assert len(server.requests) == 2
