"""AsyncContextHost / AsyncSession: the sync pipeline's guarantees, on one event loop."""

from __future__ import annotations

import asyncio
import json
import threading
import time

import pytest

from ctxengine_host.contract.engine import ContextEngine
from ctxengine_host.runtime.aio import AsyncContextHost
from ctxengine_host.runtime.host import ContextHost
from ctxengine_host.runtime.isolation import is_quarantined
from ctxengine_host.stores.quarantine import QuarantineLog

from .conftest import HANG_TIMEOUT, HEALTHY_TIMEOUT, config
from .engines import QuietEngine, faulty_engine

#: Loops the coroutine engine's methods ran on (class-level: clones share it).
SEEN_LOOPS: list[asyncio.AbstractEventLoop] = []


class AsyncSummaryEngine(ContextEngine):
    """Every method it implements is a coroutine; compacts to one summary past 300 tokens."""

    name = "async-summary"

    async def update_from_response(self, usage):
        SEEN_LOOPS.append(asyncio.get_running_loop())
        await asyncio.sleep(0)
        self.last_prompt_tokens = usage["prompt_tokens"]

    async def should_compress(self, prompt_tokens=None):
        return bool(prompt_tokens and prompt_tokens > 300)

    async def compress(self, messages, current_tokens=None, focus_topic=None, force=False):
        await asyncio.sleep(0)
        self.compression_count += 1
        return [{"role": "user", "content": f"[summary of {len(messages)} messages]"}]

    async def get_tool_schemas(self):
        return [{"name": "recall", "description": "Recall", "parameters": {"type": "object"}}]

    async def handle_tool_call(self, name, args):
        await asyncio.sleep(0)
        return json.dumps({"recalled": args.get("q")})


class HangingCoroutineEngine(QuietEngine):
    """``should_compress`` awaits forever; records whether it was cancelled."""

    name = "hanging-coroutine"
    cancelled = threading.Event()

    async def should_compress(self, prompt_tokens=None):
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            HangingCoroutineEngine.cancelled.set()
            raise
        return False


class RaisingCoroutineEngine(QuietEngine):
    name = "raising-coroutine"

    async def should_compress(self, prompt_tokens=None):
        raise RuntimeError("boom inside a coroutine")


class SlowSyncEngine(QuietEngine):
    """A sync engine whose calls take a while (they must not block the loop)."""

    name = "slow-sync"

    def should_compress(self, prompt_tokens=None):
        time.sleep(0.05)
        return False


def async_host(
    engine, store_path, *, context_length=8192, timeout=HEALTHY_TIMEOUT, **kwargs
) -> AsyncContextHost:
    return AsyncContextHost(
        engine,
        model="gpt-4",
        context_length=context_length,
        config=config(timeout, timeout, reserve_output_tokens=256, **kwargs.pop("context", {})),
        store_path=store_path,
        observers=[],
        **kwargs,
    )


async def one_turn(session, text: str, prompt_tokens: int = 50) -> None:
    await session.add_user_message(text)
    await session.build_request()
    await session.record_response(
        {"role": "assistant", "content": f"answer to {text}"},
        {"prompt_tokens": prompt_tokens, "completion_tokens": 5},
    )
    await session.finish_turn()


def test_many_concurrent_sessions_on_one_loop_keep_their_own_transcripts(store_path):
    async def main():
        async with async_host("legacy", store_path, context_length=2048) as host:

            async def converse(index: int) -> list[dict]:
                async with await host.open_session(f"s{index}", system_prompt="Be brief.") as s:
                    for turn in range(6):
                        await one_turn(s, f"s{index} turn {turn} " + "words " * 60, 1900)
                    return await s.messages()

            return await asyncio.gather(*(converse(i) for i in range(16))), host.host.store

    results, _store = asyncio.run(main())
    for index, live in enumerate(results):
        text = json.dumps(live)
        assert f"s{index} turn 5" in text
        assert all(f"s{other} turn" not in text for other in range(16) if other != index)
    reopened = ContextHost(
        "legacy", model="gpt-4", context_length=2048, store_path=store_path, observers=[]
    )
    with reopened:
        for index in range(16):
            rows = reopened.store.rows(f"s{index}")
            bodies = [r.message.get("content") for r in rows]
            for turn in range(6):  # every message stored, whatever compaction did
                assert any(f"s{index} turn {turn} " in (b or "") for b in bodies)
                assert f"answer to s{index} turn {turn} " + "words " * 60 in bodies


def test_coroutine_methods_are_awaited_on_the_callers_loop(store_path):
    SEEN_LOOPS.clear()

    async def main():
        loop = asyncio.get_running_loop()
        async with (
            async_host(AsyncSummaryEngine(), store_path) as host,
            await host.open_session("a") as session,
        ):
            await one_turn(session, "hello")
            await one_turn(session, "again", prompt_tokens=400)  # compacts
            live = await session.messages()
            tool = await session.call_engine_tool("recall", {"q": "x"})
            names = session.engine_tool_names
        return loop, live, tool, names

    loop, live, tool, names = asyncio.run(main())
    assert SEEN_LOOPS and all(seen is loop for seen in SEEN_LOOPS)
    assert [(m["role"], m["content"]) for m in live] == [("user", "[summary of 4 messages]")]
    assert json.loads(tool) == {"recalled": "x"}
    assert names == {"recall"}


def test_the_sync_host_runs_coroutine_methods_on_a_private_loop(make_host):
    SEEN_LOOPS.clear()
    host = make_host(AsyncSummaryEngine())
    with host.open_session("sync") as session:
        session.add_user_message("hi")
        session.build_request()
        session.record_response(
            {"role": "assistant", "content": "yo"}, {"prompt_tokens": 400, "completion_tokens": 1}
        )
        assert [m["content"] for m in session.messages()] == ["[summary of 2 messages]"]
        assert json.loads(session.call_engine_tool("recall", {"q": "y"})) == {"recalled": "y"}
    assert len(SEEN_LOOPS) == 1
    assert SEEN_LOOPS[0].is_running()  # the private loop, alive until the host closes
    host.close()
    assert not SEEN_LOOPS[0].is_running()


def test_a_hung_coroutine_times_out_is_cancelled_and_the_default_engine_takes_over(store_path):
    HangingCoroutineEngine.cancelled.clear()
    ticks = 0

    async def main():
        nonlocal ticks

        async def ticker():
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0.01)

        task = asyncio.create_task(ticker())
        async with (
            async_host(HangingCoroutineEngine(), store_path, timeout=HANG_TIMEOUT) as host,
            await host.open_session("h") as session,
        ):
            await one_turn(session, "hello")
            status = await session.status()
        task.cancel()
        return status

    status = asyncio.run(main())
    assert status["mode"] == "fallback" and status["engine"] == "legacy"
    assert status["quarantined_engine"] == "hanging-coroutine"
    assert HangingCoroutineEngine.cancelled.is_set()
    assert ticks >= 10  # the loop kept running while the call waited for its timeout
    assert is_quarantined("hanging-coroutine")
    [record] = QuarantineLog().records("hanging-coroutine")
    assert record.method == "should_compress" and "no answer within" in record.reason


def test_a_raising_coroutine_is_quarantined_and_the_turn_completes(store_path):
    async def main():
        async with (
            async_host(RaisingCoroutineEngine(), store_path) as host,
            await host.open_session("r") as session,
        ):
            await one_turn(session, "hello")
            return await session.status(), await session.messages()

    status, live = asyncio.run(main())
    assert status["mode"] == "fallback"
    assert [m["role"] for m in live] == ["user", "assistant"]
    [record] = QuarantineLog().records("raising-coroutine")
    assert "boom inside a coroutine" in record.reason


def test_sync_engines_never_block_the_loop(store_path):
    async def main():
        async with async_host(SlowSyncEngine(), store_path) as host:
            sessions = [await host.open_session(f"slow{i}") for i in range(8)]
            # A first turn loads the tokenizer: tiktoken builds its tables holding the GIL
            # (~0.1 s), which would stall the loop like any CPU-bound thread, engine or not.
            await one_turn(await host.open_session("warm-up"), "go")
            started = time.perf_counter()
            gaps: list[float] = []

            async def probe():
                last = time.perf_counter()
                while time.perf_counter() - started < 0.3:
                    await asyncio.sleep(0.005)
                    now = time.perf_counter()
                    gaps.append(now - last)
                    last = now

            await asyncio.gather(probe(), *(one_turn(s, "go") for s in sessions))
            elapsed = time.perf_counter() - started
            for s in sessions:
                await s.end()
            return gaps, elapsed

    gaps, elapsed = asyncio.run(main())
    # Each engine call sleeps 50 ms, on a thread, not on the loop: on the loop the probe
    # would see eight such gaps. One stall is the machine's (a shared core, a busy peer).
    stalls = [gap for gap in gaps if gap >= 0.04]
    assert len(stalls) <= 1, stalls
    assert elapsed < 8 * 0.05 + 0.3  # the eight sessions overlapped


def test_calls_on_one_session_are_serialized(store_path):
    async def main():
        async with async_host("legacy", store_path) as host:
            session = await host.open_session("serial")
            await session.add_user_message("start")
            # Two batches raced from two tasks land whole and in order of the calls.
            await asyncio.gather(
                session.add_messages([{"role": "assistant", "content": "a1"}]),
                session.add_messages([{"role": "user", "content": "u2"}]),
            )
            return [m["content"] for m in await session.messages()]

    assert asyncio.run(main()) == ["start", "a1", "u2"]


def test_using_the_host_before_start_says_how(store_path):
    host = async_host("legacy", store_path)
    with pytest.raises(RuntimeError, match="async with"):
        host.host  # noqa: B018


def test_a_closed_host_says_so_and_closing_twice_is_harmless(store_path):
    async def main():
        host = await async_host("legacy", store_path).start()
        await host.close()
        await host.close()
        with pytest.raises(RuntimeError, match="closed"):
            await host.open_session("late")

    asyncio.run(main())


def test_a_coroutine_method_called_on_its_own_loop_is_refused_not_deadlocked():
    from ctxengine_host.runtime.coroutines import CoroutineRunner

    async def answer():
        return 42

    async def main():
        runner = CoroutineRunner(asyncio.get_running_loop())
        with pytest.raises(RuntimeError, match="deadlock"):
            runner.settle(answer(), 1.0)
        return await asyncio.to_thread(runner.settle, answer(), 1.0)  # off the loop: fine

    assert asyncio.run(main()) == 42


@pytest.mark.parametrize("method", ["ingest", "select_context", "compress", "on_turn_complete"])
def test_a_hung_sync_engine_is_timed_out_and_quarantined_under_the_async_host(store_path, method):
    engine = faulty_engine(method, "hang")
    engine.compress_on_prompt_tokens = {50}

    async def main():
        async with (
            async_host(engine, store_path, timeout=HANG_TIMEOUT) as host,
            await host.open_session("hung") as session,
        ):
            await one_turn(session, "hello")
            return await session.status(), [m["content"] for m in await session.messages()]

    status, live = asyncio.run(main())
    assert (status["mode"], status["engine"]) == ("fallback", "legacy")
    assert live[0] == "hello"  # stored before the engine saw it, kept through the fallback
    [record] = QuarantineLog().records("faulty")
    assert record.method == method and "no answer within" in record.reason
