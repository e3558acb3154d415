"""The discovery examples under examples/ work as documented."""

from __future__ import annotations

import sys
from pathlib import Path

from ctxengine_host.contract.bridge import engine_plugin_manager
from ctxengine_host.discovery.engines import PLUGIN_GROUP, list_engines
from ctxengine_host.discovery.plugins import load_plugins

from .distfactory import make_dist
from .test_slot import loaded_from, resolve

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_directory_engine_example_lists_and_resolves(monkeypatch):
    monkeypatch.setenv("CTXENGINE_PLUGINS_DIR", str(EXAMPLES / "plugins-dir"))
    [entry] = [e for e in list_engines() if e.name == "newest-only"]
    assert (entry.source, entry.version) == ("directory", "0.1.0")
    resolved = resolve("newest-only", loaded_from("[engines.newest-only]\nkeep_ratio = 0.5\n"))
    assert (resolved.name, resolved.fallback) == ("newest-only", False)
    engine = resolved.engine
    assert engine.keep_ratio == 0.5 and engine.context.engine_name == "newest-only"
    engine.update_model("gpt-4", 1000)
    history = [{"role": "system", "content": "rules"}] + [
        {"role": "user" if i % 2 == 0 else "assistant", "content": "word " * 100} for i in range(40)
    ]
    kept = engine.compress(history)
    assert kept[0]["role"] == "system" and 1 < len(kept) < len(history)
    assert kept[-1] is history[-1] and engine.compression_count == 1


def test_observer_plugin_example_times_compress(site, monkeypatch):
    monkeypatch.syspath_prepend(str(EXAMPLES / "observer-plugin"))
    make_dist(site, "ctxengine-timing", "0.1.0", {PLUGIN_GROUP: {"timing": "ctxengine_timing"}})
    try:
        loaded = load_plugins()
        assert [name for name, _ in loaded.plugins] == ["timing"]
        engine = resolve("legacy").engine
        pm = engine_plugin_manager(engine, loaded.objects)
        pm.hook.compress(
            messages=[{"role": "user", "content": "hi"}],
            current_tokens=None,
            focus_topic=None,
            force=False,
            runtime_settings=None,
            deadline=None,
        )
        assert len(loaded.objects[0].durations) == 1
    finally:
        sys.modules.pop("ctxengine_timing", None)
