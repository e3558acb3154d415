"""The ``ctxengine.plugins`` group: observers, summarizer hooks, rejection, allow/block."""

from __future__ import annotations

from ctxengine_host.contract.bridge import engine_plugin_manager
from ctxengine_host.discovery.engines import PLUGIN_GROUP
from ctxengine_host.discovery.plugins import load_plugins, observers, summarizer_plugin_manager

from .distfactory import make_dist
from .test_validation import Good

OBSERVER = """
from ctxengine_host.contract.hookspecs import hookimpl

calls = []


@hookimpl(wrapper=True)
def should_compress(prompt_tokens):
    calls.append(("before", prompt_tokens))
    result = yield
    calls.append(("after", result))
    return result


@hookimpl
def ctxengine_summarize(content, target_tokens, focus_topic, previous, level):
    return f"summary of {len(content)} chars in {target_tokens}"
"""

OWNER = """
from ctxengine_host.contract.hookspecs import hookimpl


@hookimpl
def compress(messages):
    return []
"""


def add_plugin(site, dist, name, source):
    module = "tpe_plugin_" + name
    make_dist(site, dist, "1", {PLUGIN_GROUP: {name: module}}, {f"{module}.py": source})


def test_observer_sees_engine_calls_and_summarizer_hook_answers(site):
    add_plugin(site, "tpe-observer", "observer", OBSERVER)
    loaded = load_plugins()
    assert [name for name, _ in loaded.plugins] == ["observer"] and loaded.problems == []
    pm = engine_plugin_manager(Good(), observers(loaded))
    assert pm.hook.should_compress(prompt_tokens=7) is False
    module = loaded.objects[0]
    assert module.calls == [("before", 7), ("after", False)]
    spm = summarizer_plugin_manager(loaded)
    text = spm.hook.ctxengine_summarize(
        content="abcd", target_tokens=10, focus_topic=None, previous=None, level=0
    )
    assert text == "summary of 4 chars in 10"


def test_plugin_owning_a_contract_hook_is_rejected(site):
    add_plugin(site, "tpe-owner", "owner", OWNER)
    loaded = load_plugins()
    assert loaded.plugins == []
    assert "implements compress without wrapper=True" in loaded.problems[0]


def test_broken_plugin_is_skipped_and_the_rest_load(site):
    add_plugin(site, "tpe-crashes", "crashes", "raise RuntimeError('plugin bug')\n")
    add_plugin(site, "tpe-observer", "observer", OBSERVER)
    loaded = load_plugins()
    assert [name for name, _ in loaded.plugins] == ["observer"]
    assert (
        "plugin 'crashes' (tpe-crashes)" in loaded.problems[0]
        and "plugin bug" in loaded.problems[0]
    )


def test_allow_and_block_lists_govern_plugins(site, monkeypatch, tmp_path):
    marker = tmp_path / "imported"
    source = f"import pathlib\npathlib.Path({str(marker)!r}).write_text('x')\n" + OBSERVER
    add_plugin(site, "tpe-observer", "observer", source)
    monkeypatch.setenv("CTXENGINE_LOAD_PLUGINS", "")
    assert load_plugins().plugins == [] and not marker.exists()
    monkeypatch.setenv("CTXENGINE_LOAD_PLUGINS", "tpe-observer")
    monkeypatch.setenv("CTXENGINE_BLOCK_PLUGINS", "observer")
    assert load_plugins().plugins == [] and not marker.exists()
    monkeypatch.delenv("CTXENGINE_BLOCK_PLUGINS")
    assert len(load_plugins().plugins) == 1 and marker.exists()
