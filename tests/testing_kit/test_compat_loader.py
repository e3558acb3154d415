"""Framework-style plugin directories load unchanged and pass the contract kit."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import textwrap

import pytest
from host_core.distfactory import engine_module

from ctxengine_host.contract.engine import ContextEngine
from ctxengine_host.discovery.compat import PluginRegistrar, is_shim, load_plugin_directory
from ctxengine_host.discovery.engines import list_engines, load_engine_factory
from ctxengine_host.testing import ContextEngineContract, samples

from .framework_plugin import PLUGIN_NAME, write_plugin


@pytest.fixture
def plugin_dir(tmp_path):
    return write_plugin(tmp_path / "plugins")


def test_plugin_directory_loads_unchanged(plugin_dir, caplog):
    caplog.set_level(logging.INFO, logger="ctxengine.compat")
    engines = load_plugin_directory(plugin_dir)
    assert len(engines) == 1
    engine = engines[0]
    assert engine.name == PLUGIN_NAME
    assert isinstance(engine, ContextEngine)
    assert is_shim(sys.modules["agent.context_engine"])
    # register(ctx) also registered a command: accepted and noted, not an error.
    assert "register_command('window-stats')" in caplog.text
    # The relative imports resolved inside the synthetic package.
    assert type(engine).__module__.endswith(".engine")


def test_loading_twice_gives_fresh_engines_from_one_import(plugin_dir):
    first = load_plugin_directory(plugin_dir)[0]
    second = load_plugin_directory(plugin_dir)[0]
    assert first is not second
    assert type(first) is type(second)


def test_exported_subclass_without_register(tmp_path):
    directory = tmp_path / "plain-export"
    directory.mkdir()
    (directory / "plugin.yaml").write_text("name: plain-export\n")
    (directory / "__init__.py").write_text(
        engine_module("PlainEngine", "plain-export", base="agent.context_engine")
    )
    [cls] = load_plugin_directory(directory)
    assert cls.__name__ == "PlainEngine"
    assert cls().name == "plain-export"


def test_discovery_lists_and_loads_the_directory_engine(plugin_dir, monkeypatch):
    monkeypatch.setenv("CTXENGINE_PLUGINS_DIR", str(plugin_dir.parent))
    [entry] = [e for e in list_engines() if e.name == PLUGIN_NAME]
    assert entry.source == "directory"
    engine = load_engine_factory(entry)()
    assert engine.name == PLUGIN_NAME


def test_an_installed_framework_wins_over_the_shims(tmp_path):
    """With a real ``agent`` package on the path, the shims stay out of the way."""
    real = tmp_path / "site" / "agent"
    real.mkdir(parents=True)
    (real / "__init__.py").write_text("")
    (real / "context_engine.py").write_text(
        textwrap.dedent(
            """\
            import abc

            class ContextEngine(abc.ABC):
                REAL_FRAMEWORK = True
            """
        )
    )
    script = textwrap.dedent(
        """\
        from ctxengine_host.discovery.compat import (
            FrameworkEngineAdapter, install_framework_shims, is_shim
        )
        from ctxengine_legacy.engine import LegacyEngine
        install_framework_shims()
        import agent.context_engine as ce
        assert not is_shim(ce) and ce.ContextEngine.REAL_FRAMEWORK
        adapter = FrameworkEngineAdapter(LegacyEngine())
        assert isinstance(adapter, ce.ContextEngine)
        # Submodules the real framework lacks are still provided.
        from agent.context_compressor import resolve_model_threshold
        # The framework's signature: (model, thresholds, default, provider="").
        print("ok", resolve_model_threshold("gpt-4o", {"gpt-4o": 0.5}, 0.75),
              resolve_model_threshold("gpt-4o", {"azure:gpt-4o": 0.6}, 0.75, "openai"))
        """
    )
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "site")}
    proc = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok 0.5 0.75"


class TestFrameworkPluginContract(ContextEngineContract):
    """The framework-style engine, loaded unchanged, passes our whole contract kit (its
    budget is the framework's: the whole request, the system prompt included)."""

    budget_excludes_system_prompt = False

    @pytest.fixture
    def engine(self, plugin_dir):
        return load_plugin_directory(plugin_dir)[0]

    @pytest.fixture
    def plugin_dir(self, tmp_path):
        return write_plugin(tmp_path / "plugins")


def test_framework_plugin_drives_a_replay(tmp_path, plugin_dir):
    """`ctxengine replay --engine window-lite` runs the unchanged plugin through the runtime."""
    session = tmp_path / "session.jsonl"
    session.write_text(
        "".join(json.dumps(m) + "\n" for m in samples.conversation(30, marker="replay"))
    )
    env = {
        **os.environ,
        "CTXENGINE_PLUGINS_DIR": str(plugin_dir.parent),
        "CTXENGINE_DATA_DIR": str(tmp_path / "data"),
        "CTXENGINE_QUARANTINE_FILE": str(tmp_path / "quarantine.jsonl"),
    }
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "ctxengine_host.cli",
            "replay",
            str(session),
            "--engine",
            PLUGIN_NAME,
            "--context-length",
            "6000",
            "--json",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["engine"]["name"] == PLUGIN_NAME and not report["engine"]["fallback"]
    assert report["engine"]["tools"] == ["window_stats"]
    summary = report["summary"]
    assert summary["turns"] == 30 and summary["quarantines"] == 0
    assert summary["turns_over_budget"] == 0
    # The plugin's select_context shaped the requests: far fewer tokens than the history.
    assert summary["tokens_saved_ratio"] > 0.3


def test_same_name_from_another_directory_does_not_reuse_its_modules(tmp_path):
    first = load_plugin_directory(write_plugin(tmp_path / "a"))[0]
    second_dir = write_plugin(tmp_path / "b")
    engine_py = second_dir / "engine.py"
    source = engine_py.read_text().replace("self.turns_seen = 0", "self.turns_seen = 7")
    engine_py.write_text(source)
    second = load_plugin_directory(second_dir)[0]
    assert (first.turns_seen, second.turns_seen) == (0, 7)


def test_registrar_accepts_framework_registrations(caplog):
    caplog.set_level(logging.INFO, logger="ctxengine.compat")
    ctx = PluginRegistrar("demo", config={"depth": 3})
    ctx.register_hook("post_llm_call", print)
    ctx.register_tool({"name": "demo_tool"})
    ctx.register_cli_command("demo-cli")  # any register_* call is accepted
    assert ctx.get_config() == {"depth": 3} and ctx.get_config("depth") == 3
    assert ctx.get_config("missing", "default") == "default"
    first, second = object(), object()
    ctx.register_context_engine(first)
    ctx.register_context_engine(second)
    assert ctx.engine is first and "rejected" in ctx.warnings[0]
    assert len(ctx.notes) == 3 and "register_cli_command('demo-cli')" in caplog.text
    with pytest.raises(AttributeError):
        ctx.unregister_everything  # noqa: B018


def test_registrar_offers_every_call_of_the_framework_plugin_context():
    """Every ``PluginContext`` member of hermes-agent 0.19.0 is there (unneeded: no-ops)."""
    from ctxengine_host.discovery.compat import auxiliary
    from ctxengine_host.discovery.compat.loader import FRAMEWORK_REGISTRATIONS

    auxiliary.use_summarizer_of(None)  # the default service, whatever ran before
    ctx = PluginRegistrar("hermes-thing", manifest={"name": "thing", "provides_tools": ["t"]})
    for call in FRAMEWORK_REGISTRATIONS:
        assert getattr(ctx, call)("x", lambda *a, **k: None) is None
    assert ctx.manifest.name == "thing" and ctx.manifest.provides_tools == ["t"]
    assert ctx.profile_name == "default"
    assert ctx.inject_message("hello") is False
    assert "unavailable" in json.loads(ctx.dispatch_tool("web_search", {}))["error"]
    assert ctx.llm.complete([{"role": "user", "content": "alpha beta gamma. " * 40}])
    assert len(ctx.notes) == len(FRAMEWORK_REGISTRATIONS) + 2


def test_auxiliary_call_llm_answers_in_the_chat_completion_shape():
    """hermes-lcm's call: ``call_llm(task=..., messages=..., max_tokens=...)``, then
    ``response.choices[0].message.content``; our summarizer answers, no provider."""
    from ctxengine_host.discovery.compat import auxiliary, install_framework_shims
    from ctxengine_host.discovery.compat.shims import route_auxiliary_client

    auxiliary.use_summarizer_of(None)  # the default service, whatever ran before
    install_framework_shims()
    route_auxiliary_client()
    from agent.auxiliary_client import call_llm, extract_content_or_reasoning

    text = "The deploy failed because the cache key was stale. " * 30
    response = call_llm(
        task="compression",
        messages=[{"role": "user", "content": text}],
        temperature=0.3,
        max_tokens=40,
        model="any-model",
        timeout=5,
    )
    content = response.choices[0].message.content
    assert content and len(content) < len(text)
    assert extract_content_or_reasoning(response) == content.strip()
    assert response.usage.completion_tokens <= 40
