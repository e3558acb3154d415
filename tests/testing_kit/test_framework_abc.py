"""The framework's context-engine tests, run against our exported engines (current-ABC shim).

tests/hermes/test_framework_abc.py runs the same checks under the released package.
"""

from __future__ import annotations

import pytest

from ctxengine_host.discovery.compat import install_framework_shims, is_shim

from .framework_abc_checks import CHECKS, exported


@pytest.mark.parametrize("engine_name", ["lcm", "legacy"])
@pytest.mark.parametrize("check", sorted(CHECKS))
def test_framework_assertions_hold_for_exported_engines(tmp_path, engine_name, check):
    install_framework_shims()
    import agent.context_engine as abc_module

    if not is_shim(abc_module):
        pytest.skip("a real framework is installed here; tests/hermes covers it")
    CHECKS[check](exported(engine_name, tmp_path / "data"))


def test_the_shim_abc_has_the_current_surface():
    """The members the current ABC (commit 114a56dca2ef) adds, with its defaults."""
    install_framework_shims()
    from agent.context_compressor import resolve_model_threshold
    from agent.context_engine import ContextEngine, sanitize_memory_context

    class Stub(ContextEngine):
        name = "stub"

        def update_from_response(self, usage):
            pass

        def should_compress(self, prompt_tokens=None):
            return False

        def compress(
            self, messages, current_tokens=None, focus_topic=None, force=False, memory_context=""
        ):
            return messages

    stub = Stub()
    assert stub.should_compress_info() == (False, None)
    assert stub.prune_tool_results_only([{"role": "user", "content": "x"}]) == (
        [{"role": "user", "content": "x"}],
        0,
    )
    assert stub.cache_plan([], []) is None and stub.pending_compression_operation([]) is None
    assert stub.has_content_to_compress([]) is True
    assert stub.should_defer_preflight_to_real_usage(10) is False
    assert (stub.protect_first_n, stub.protect_last_n) == (3, 6)
    assert (
        stub.get_automatic_compaction_status_message(phase="compress", default_message="m") == "m"
    )
    stub.emit_automatic_compaction_status = False
    assert (
        stub.get_automatic_compaction_status_message(phase="compress", default_message="m") is None
    )
    assert resolve_model_threshold("gpt-4o-mini", {"gpt-4o": 0.6, "4o-mini": 0.7}, 0.75) == 0.7
    assert resolve_model_threshold("gpt-4o", {"azure:gpt-4o": 0.6}, 0.75, "Azure") == 0.6
    assert len(sanitize_memory_context("x" * 10_000)) < 6_100


def test_the_contract_check_accepts_the_current_compress_signature():
    """``compress(..., force=False, memory_context="")`` is the current ABC's signature."""
    from ctxengine_host.discovery.validation import contract_problems

    from .broken_engines import GoodEngine

    class CurrentAbcEngine(GoodEngine):
        def compress(
            self, messages, current_tokens=None, focus_topic=None, force=False, memory_context=""
        ):
            return messages

    assert contract_problems(CurrentAbcEngine(), CurrentAbcEngine.name) == []
