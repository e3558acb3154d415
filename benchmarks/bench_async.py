"""Host overhead per turn: the async runtime (many sessions on one loop) vs the sync one.

A turn is what an agent loop does without the provider call: add the user
message, build the request, record the assistant message with usage, finish the
turn. The engine never compacts, so what is measured is the host. The sync run
drives the sessions one after the other on one thread; the async run drives all
of them concurrently on one event loop (each call hops to the executor). Also
reported: the longest the loop went without running (a probe task), which stays
small because no engine or store work runs on the loop.

    .venv/bin/python benchmarks/bench_async.py [--sessions 64] [--turns 50] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from ctxengine_host.config import LoadedConfig
from ctxengine_host.contract.engine import ContextEngine
from ctxengine_host.runtime.aio import AsyncContextHost
from ctxengine_host.runtime.host import ContextHost


class NeverCompacts(ContextEngine):
    name = "bench-async-never-compacts"

    def update_from_response(self, usage):
        self.last_prompt_tokens = usage["prompt_tokens"]

    def should_compress(self, prompt_tokens=None):
        return False

    def compress(self, messages, current_tokens=None, focus_topic=None):
        return messages


def _reply(session_index: int, turn: int) -> dict:
    return {"role": "assistant", "content": f"answer {turn} for session {session_index}"}


USAGE = {"prompt_tokens": 100, "completion_tokens": 10}
HOST_ARGS = {"model": "gpt-4", "context_length": 1_000_000, "config": LoadedConfig()}


def run_sync(sessions: int, turns: int, store: Path) -> dict:
    with ContextHost(NeverCompacts(), store_path=store, observers=[], **HOST_ARGS) as host:
        opened = [host.open_session(f"sync-{i}") for i in range(sessions)]
        latencies = []
        started = time.perf_counter()
        for turn in range(turns):
            for index, session in enumerate(opened):
                t0 = time.perf_counter()
                session.add_user_message(f"question {turn}")
                session.build_request()
                session.record_response(_reply(index, turn), USAGE)
                session.finish_turn()
                latencies.append(time.perf_counter() - t0)
        wall = time.perf_counter() - started
    return _figures(wall, latencies, sessions * turns)


async def _run_async(sessions: int, turns: int, store: Path) -> dict:
    host = AsyncContextHost(NeverCompacts(), store_path=store, observers=[], **HOST_ARGS)
    async with host:
        opened = [await host.open_session(f"async-{i}") for i in range(sessions)]
        latencies: list[float] = []
        gaps: list[float] = []
        done = asyncio.Event()

        async def probe() -> None:
            last = time.perf_counter()
            while not done.is_set():
                await asyncio.sleep(0.001)
                now = time.perf_counter()
                gaps.append(now - last - 0.001)
                last = now

        async def converse(index: int) -> None:
            session = opened[index]
            for turn in range(turns):
                t0 = time.perf_counter()
                await session.add_user_message(f"question {turn}")
                await session.build_request()
                await session.record_response(_reply(index, turn), USAGE)
                await session.finish_turn()
                latencies.append(time.perf_counter() - t0)

        probing = asyncio.create_task(probe())
        started = time.perf_counter()
        await asyncio.gather(*(converse(i) for i in range(sessions)))
        wall = time.perf_counter() - started
        done.set()
        await probing
    figures = _figures(wall, latencies, sessions * turns)
    figures["max_loop_stall_ms"] = round(max(gaps) * 1000, 2) if gaps else 0.0
    return figures


def _figures(wall: float, latencies: list[float], turns: int) -> dict:
    ordered = sorted(latencies)
    return {
        "turns": turns,
        "wall_s": round(wall, 3),
        "host_ms_per_turn": round(wall / turns * 1000, 3),
        "turn_latency_p50_ms": round(statistics.median(ordered) * 1000, 3),
        "turn_latency_p99_ms": round(ordered[int(len(ordered) * 0.99) - 1] * 1000, 3),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=64)
    parser.add_argument("--turns", type=int, default=50)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        sync = run_sync(args.sessions, args.turns, Path(tmp) / "sync.db")
        aio = asyncio.run(_run_async(args.sessions, args.turns, Path(tmp) / "async.db"))
    result = {
        "sessions": args.sessions,
        "turns_per_session": args.turns,
        "sync": sync,
        "async": aio,
    }
    result["async_vs_sync_per_turn"] = round(aio["host_ms_per_turn"] / sync["host_ms_per_turn"], 2)
    if args.json:
        json.dump(result, sys.stdout, indent=2)
        print()
        return 0
    print(f"{args.sessions} sessions x {args.turns} turns, one loop vs one thread")
    for name in ("sync", "async"):
        row = result[name]
        print(
            f"  {name:5}  {row['host_ms_per_turn']:7.3f} ms/turn (wall/turns)  "
            f"latency p50 {row['turn_latency_p50_ms']:.3f} ms  "
            f"p99 {row['turn_latency_p99_ms']:.3f} ms"
        )
    print(f"  async / sync per turn: {result['async_vs_sync_per_turn']}x")
    print(f"  longest loop stall during the async run: {aio['max_loop_stall_ms']} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
