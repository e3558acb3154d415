"""The contract kit checks engines whose contract methods are coroutines."""

from __future__ import annotations

import asyncio

import pytest

from ctxengine_host.testing import ContextEngineContract
from ctxengine_legacy.engine import LegacyEngine

ASYNC_METHODS = ("update_from_response", "should_compress", "compress", "handle_tool_call")


class AsyncLegacy(LegacyEngine):
    """The legacy engine with its core contract methods written as coroutines."""

    name = "async-legacy"

    async def update_from_response(self, usage):
        await asyncio.sleep(0)
        return super().update_from_response(usage)

    async def should_compress(self, prompt_tokens=None):
        await asyncio.sleep(0)
        return super().should_compress(prompt_tokens)

    async def compress(
        self,
        messages,
        current_tokens=None,
        focus_topic=None,
        force=False,
        runtime_settings=None,
        deadline=None,
    ):
        await asyncio.sleep(0)
        return super().compress(
            messages, current_tokens, focus_topic, force, runtime_settings, deadline
        )

    async def handle_tool_call(self, name, args):
        await asyncio.sleep(0)
        return super().handle_tool_call(name, args)


class BrokenAsync(AsyncLegacy):
    """Forgets to update its counters: the kit must see through the coroutine."""

    name = "broken-async"

    async def update_from_response(self, usage):
        await asyncio.sleep(0)


class TestAsyncLegacy(ContextEngineContract):
    @pytest.fixture
    def engine(self, engine_context):
        return AsyncLegacy(context=engine_context)

    def test_the_methods_really_are_coroutines(self, engine):
        assert all(asyncio.iscoroutinefunction(getattr(engine, m)) for m in ASYNC_METHODS)


def test_the_kit_reports_a_broken_coroutine_method():
    kit = ContextEngineContract()
    with pytest.raises(AssertionError, match=r"\[contract: update-from-response\]"):
        kit.test_update_from_response(BrokenAsync())
