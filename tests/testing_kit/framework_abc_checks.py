"""The assertions of the framework's own ``tests/agent/test_context_engine.py``, against
our exported engines (hermes-agent at commit 114a56dca2ef; docs/compat.md maps them).

Each check takes a fresh exported engine (a ``FrameworkEngineAdapter``) and raises
``AssertionError`` on failure. They run in our environment, where the framework's
current ABC is our shim (tests/testing_kit/test_framework_abc.py), and in the
framework environment against the released package's ABC
(tests/hermes/test_framework_abc.py runs tests/hermes/abc_checks_main.py).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ctxengine_host.discovery.compat import FrameworkEngineAdapter, PluginRegistrar
from ctxengine_host.testing.context import kit_engine_context
from ctxengine_host.tokens import TokenCounter

Factory = Callable[[], Any]


def exported(name: str, data_dir: Path) -> FrameworkEngineAdapter:
    """Our engine ``name`` (lcm or legacy), exported to the framework's ABC."""
    context = kit_engine_context(name, data_dir, TokenCounter("gpt-4"))
    if name == "lcm":
        from ctxengine_lcm.engine import LcmEngine

        return FrameworkEngineAdapter(LcmEngine(context=context))
    from ctxengine_legacy.engine import LegacyEngine

    return FrameworkEngineAdapter(LegacyEngine(context=context))


def check_default_cache_plan(engine: Any) -> None:
    """TestDefaults.test_default_cache_plan."""
    assert engine.cache_plan([], []) is None


def check_default_get_status(engine: Any) -> None:
    """TestDefaults.test_default_get_status (the stub's window: 200,000 tokens at 50%)."""
    engine.update_model("stub-model", 200_000)
    engine.threshold_tokens = 100_000
    engine.last_prompt_tokens = 50_000
    status = engine.get_status()
    assert status["last_prompt_tokens"] == 50_000
    assert status["context_length"] == 200_000
    assert status["threshold_tokens"] == 100_000
    assert 0 < status["usage_percent"] <= 100


def check_on_session_reset(engine: Any) -> None:
    """TestDefaults.test_on_session_reset."""
    engine.on_session_start("abc-checks")
    engine.last_prompt_tokens = 999
    engine.compression_count = 3
    engine.on_session_reset()
    assert engine.last_prompt_tokens == 0
    assert engine.compression_count == 0


def check_register_engine(engine: Any) -> None:
    """TestPluginContextEngineSlot.test_register_engine: a plugin ctx registers it."""
    try:
        from hermes_cli.plugins import PluginContext, PluginManager, PluginManifest
    except ImportError:  # no framework: our plugin ctx
        ctx = PluginRegistrar("test-lcm")
        ctx.register_context_engine(engine)
        registered = ctx.engine
    else:
        manager = PluginManager()
        ctx = PluginContext(PluginManifest(name="test-lcm"), manager)
        ctx.register_context_engine(engine)
        registered = manager._context_engine
    assert registered is engine
    assert registered.name == engine.engine.name


def check_copy_does_not_share_budget(engine: Any) -> None:
    """The stub's update_model note (#42449): a per-agent copy's model switch must not
    change the shared instance; the framework deep-copies the registered engine."""
    engine.update_model("stub-model", 200_000)
    clone = copy.deepcopy(engine)
    clone.update_model("stub-model", 64_000)
    assert (engine.context_length, clone.context_length) == (200_000, 64_000)
    assert clone is not engine and clone.name == engine.name


CHECKS: dict[str, Callable[[Any], None]] = {
    "test_default_cache_plan": check_default_cache_plan,
    "test_default_get_status": check_default_get_status,
    "test_on_session_reset": check_on_session_reset,
    "test_register_engine": check_register_engine,
    "copy_does_not_share_budget": check_copy_does_not_share_budget,
}
