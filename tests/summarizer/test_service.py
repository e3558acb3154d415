"""The service: escalation levels, stats, recording, the plugin hook, settings validation."""

from __future__ import annotations

import threading

import pluggy
import pytest

from ctxengine_host.config import ConfigError, SummarizerSection
from ctxengine_host.contract.hookspecs import PROJECT_NAME, PluginSpec, hookimpl
from ctxengine_host.summarizer import (
    OpenAISettings,
    SummarizerError,
    SummarizerService,
    parse_backend_settings,
)
from ctxengine_host.tokens import TokenCounter

CONTENT = [
    {
        "role": "user",
        "content": f"Step {i}: the cache node cache-{i}.internal answers on {9000 + i}.",
    }
    for i in range(40)
]


class ScriptedPlugin:
    """A ``ctxengine_summarize`` plugin answering per escalation level."""

    def __init__(
        self, answers: dict[int, str | None] | None = None, error: Exception | None = None
    ):
        self.answers = answers or {}
        self.error = error
        self.levels: list[int] = []

    @hookimpl
    def ctxengine_summarize(self, content, target_tokens, focus_topic, previous, level):
        self.levels.append(level)
        if self.error:
            raise self.error
        return self.answers.get(level)


def _service(plugin: ScriptedPlugin | None = None) -> SummarizerService:
    manager = pluggy.PluginManager(PROJECT_NAME)
    manager.add_hookspecs(PluginSpec)
    if plugin:
        manager.register(plugin)
    return SummarizerService(SummarizerSection(), TokenCounter(), manager)


def test_level_0_when_the_backend_summary_fits():
    service = _service()
    result = service.summarize(CONTENT, 200)
    assert result.level == 0
    assert result.output_tokens <= 200 < result.input_tokens
    assert service.stats["level_0"] == 1 and service.stats["calls"] == 1


def test_level_1_when_the_summary_is_not_smaller_than_its_input():
    plugin = ScriptedPlugin({0: "x " * 5000, 1: "cache-3.internal answers on 9003."})
    service = _service(plugin)
    result = service.summarize(CONTENT, 200)
    assert plugin.levels == [0, 1]
    assert result.level == 1 and result.backend == "plugin"
    assert result.text == "cache-3.internal answers on 9003."
    assert service.stats["level_1"] == 1


def test_level_2_truncation_always_fits_the_target():
    plugin = ScriptedPlugin({0: "word " * 5000, 1: "line of text\n" * 2000})
    service = _service(plugin)
    for target in (1, 7, 50, 333):
        result = service.summarize(CONTENT, target)
        assert result.level == 2
        assert result.output_tokens <= target
        assert service.counter.count_text(result.text) == result.output_tokens
    assert service.stats["level_2"] == 4


def test_empty_summaries_escalate_to_a_cut_of_the_input_itself():
    plugin = ScriptedPlugin({0: "", 1: "  \n"})
    service = _service(plugin)
    result = service.summarize(CONTENT, 60)
    assert plugin.levels == [0, 1]
    assert result.level == 2
    assert 0 < result.output_tokens <= 60
    assert result.text.startswith("[user] Step 0: the cache node cache-0.internal")


def test_text_with_nothing_salient_still_gets_a_non_empty_summary():
    words = ("alpha", "beta", "gamma", "delta")
    filler = " ".join(words[(i * 7) % 4] for i in range(3000))
    result = _service().summarize(filler, 100)
    assert result.text.strip()
    assert 0 < result.output_tokens <= 100


def test_small_input_escalates_to_something_smaller_than_itself():
    service = _service()
    result = service.summarize([{"role": "user", "content": "Use port 8443."}], 500)
    assert result.output_tokens < result.input_tokens


def test_a_plugin_returning_none_leaves_the_configured_backend_to_answer():
    plugin = ScriptedPlugin({})
    result = _service(plugin).summarize(CONTENT, 200)
    assert plugin.levels == [0]
    assert result.backend == "extractive" and result.level == 0


def test_a_broken_plugin_falls_back_to_the_backend():
    plugin = ScriptedPlugin(error=RuntimeError("plugin bug"))
    result = _service(plugin).summarize(CONTENT, 200)
    assert result.backend == "extractive"


def test_a_plugin_summarizer_error_is_permanent():
    service = _service(ScriptedPlugin(error=SummarizerError("quota")))
    with pytest.raises(SummarizerError, match="quota"):
        service.summarize(CONTENT, 200)
    assert service.stats["errors"] == 1 and service.stats["calls"] == 1


def test_recording_collects_results_of_this_thread_only():
    service = _service()
    other: list = []

    def elsewhere():
        other.append(service.summarize(CONTENT, 100))

    with service.recording() as results:
        service.summarize(CONTENT, 100)
        thread = threading.Thread(target=elsewhere)
        thread.start()
        thread.join()
        with service.recording() as inner:
            service.summarize(CONTENT, 50)
    service.summarize(CONTENT, 100)
    assert [r.output_tokens <= 100 for r in results] == [True, True]
    assert len(inner) == 1 and len(other) == 1
    assert service.stats["calls"] == 4


def test_settings_default_to_extractive():
    assert parse_backend_settings(None).backend == "extractive"
    assert parse_backend_settings(SummarizerSection()).backend == "extractive"


def test_openai_settings_are_validated_with_clear_errors():
    settings = parse_backend_settings({"backend": "openai", "model": "gpt-4o-mini"})
    assert isinstance(settings, OpenAISettings)
    assert settings.api_key_env == "OPENAI_API_KEY"
    with pytest.raises(ConfigError, match="key 'model'"):
        parse_backend_settings({"backend": "openai"})
    with pytest.raises(ConfigError, match="unknown key 'modle'"):
        parse_backend_settings({"backend": "openai", "model": "m", "modle": "x"})
    with pytest.raises(ConfigError, match="timeout_seconds"):
        parse_backend_settings({"backend": "openai", "model": "m", "timeout_seconds": 0})
    with pytest.raises(ConfigError, match="unknown key 'base_url'"):
        parse_backend_settings({"backend": "extractive", "base_url": "http://x"})
    with pytest.raises(ConfigError, match="backend 'llama' is unknown"):
        parse_backend_settings({"backend": "llama"})


def test_empty_input_gives_an_empty_summary_without_calling_a_backend():
    plugin = ScriptedPlugin({0: "should not be asked"})
    result = _service(plugin).summarize([], 100)
    assert result.text == "" and result.level == 0 and plugin.levels == []


class _EncodeLog(TokenCounter):
    """A real counter that records the texts it hands to tiktoken."""

    def __init__(self) -> None:
        super().__init__()
        self.encoded: list[str] = []

    def _encode(self, text: str) -> list[int]:
        self.encoded.append(text)
        return super()._encode(text)


def test_input_tokens_are_the_content_as_messages_plus_the_previous_summary():
    counter = TokenCounter()
    service = SummarizerService(SummarizerSection(), counter)
    previous = "## Task\n- user: keep the cache nodes listed"
    result = service.summarize(CONTENT, 200, previous=previous)
    assert result.input_tokens == counter.count_messages(CONTENT) + counter.count_text(previous)
    text = "\n".join(m["content"] for m in CONTENT)
    assert service.summarize(text, 200).input_tokens == counter.count_text(text)


def test_messages_counted_on_arrival_are_not_tokenized_again_for_the_input_figure():
    counter = _EncodeLog()
    long_content = [
        {"role": "tool", "tool_call_id": f"c{i}", "content": f"line {i}: " + "x" * 3000}
        for i in range(5)
    ]
    for message in long_content:  # what the host does when each message arrives
        counter.count_message(message)
    counter.encoded.clear()
    SummarizerService(SummarizerSection(), counter).summarize(long_content, 100)
    assert not any("x" * 3000 in text for text in counter.encoded)


def test_empty_content_gives_an_empty_summary_without_calling_the_backend():
    plugin = ScriptedPlugin({0: "should not be asked"})
    result = _service(plugin).summarize([{"role": "user", "content": ""}], 100)
    assert result.text == "" and plugin.levels == []


def test_the_transcript_is_rendered_only_when_truncation_cuts_the_input(monkeypatch):
    from ctxengine_host.summarizer import service as service_module

    rendered: list[object] = []
    real = service_module.render_transcript
    monkeypatch.setattr(
        service_module,
        "render_transcript",
        lambda content: rendered.append(content) or real(content),
    )
    assert _service().summarize(CONTENT, 200).level == 0
    assert rendered == []  # the backend answered: no transcript was needed
    result = _service(ScriptedPlugin({0: " ", 1: " "})).summarize(CONTENT, 20)
    assert result.level == 2 and result.text.startswith("[user] Step 0")
    assert rendered == [CONTENT]


@pytest.mark.parametrize(
    "content",
    [
        "",
        "plain text",
        [],
        [{"role": "user", "content": ""}],
        [{"role": "tool", "tool_call_id": "c1", "content": ""}],
        [{"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "function": {}}]}],
        CONTENT,
    ],
)
def test_has_transcript_says_whether_the_rendered_transcript_is_empty(content):
    from ctxengine_host.summarizer.render import has_transcript, render_transcript

    assert has_transcript(content) == bool(render_transcript(content))


def test_a_summary_holding_half_a_character_comes_back_well_formed():
    """A model's JSON can carry ``\\ud83d`` alone (echoing a tool output cut through an
    emoji): the summary went to the engine as it was, where no store can encode it (LCM's
    write of it failed) and providers refuse it. It comes back with U+FFFD in its place,
    as a message is kept."""
    plugin = ScriptedPlugin({0: "The cache node answers \ud83d on 9000."})
    result = _service(plugin).summarize(CONTENT, 200)
    assert result.level == 0
    assert result.text == "The cache node answers \ufffd on 9000."
