"""LCM ingest: CPU per message, whole and by part, on ``bench_lcm_scale``'s messages.

Opt-in (not a test). ``bench_lcm_scale`` reports ingest as wall-clock messages per second,
which follows the machine's load; this prints CPU microseconds per message (the process's,
so the counting threads are included), which moves far less, and what each part costs on
one thread:

- ``count``: the engine's token count of each message (``TokenCounter.count_any``, tiktoken);
- ``rows``: ``render.to_new_message`` (stored columns, extra JSON, version digest);
- ``store``: ``SqliteStore.append`` of those rows in 500s (rows, indexes, FTS5, commit).

    .venv/bin/python benchmarks/bench_lcm_ingest.py --messages 30000
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from bench_lcm_scale import BATCH, Generator, make_engine

from ctxengine_host.tokens import TokenCounter
from ctxengine_lcm import render
from ctxengine_lcm.engine import INGEST_BATCH
from ctxengine_lcm.sqlite_store import SqliteStore


def whole(total: int) -> tuple[float, float]:
    """(process CPU µs per message, wall messages/s) of ``LcmEngine.ingest`` in calls of
    ``BATCH``, compacting between calls as ``bench_lcm_scale``'s build does."""
    with tempfile.TemporaryDirectory() as directory:
        engine = make_engine(Path(directory), "fast")
        gen = Generator(size=total)
        cpu = wall = 0.0
        for _ in range(0, total, BATCH):
            batch = gen.messages(BATCH)
            c0, w0 = time.process_time(), time.perf_counter()
            engine.ingest("bench", batch)
            cpu += time.process_time() - c0
            wall += time.perf_counter() - w0
            while engine.should_compress_preflight([]) and engine.compress([]).compacted:
                pass
        engine.dispose()
    return 1e6 * cpu / total, total / wall


def parts(total: int) -> dict[str, float]:
    """Thread CPU µs per message of each part, run alone on this thread."""
    messages = Generator(size=total).messages(total)
    counter = TokenCounter("gpt-4")
    counter.count_any(messages[0])  # the encoder's load is not a message's cost
    out: dict[str, float] = {}
    t0 = time.thread_time()
    counts = [counter.count_any(m) for m in messages]
    out["count"] = time.thread_time() - t0
    t0 = time.thread_time()
    rows = [
        render.to_new_message(m, m["message_uid"], n, 1.0, None)
        for m, n in zip(messages, counts, strict=True)
    ]
    out["rows"] = time.thread_time() - t0
    with tempfile.TemporaryDirectory() as directory:
        store = SqliteStore(Path(directory) / "ingest.db")
        conversation = store.current_conversation("bench")
        t0 = time.thread_time()
        for start in range(0, total, INGEST_BATCH):
            store.append(conversation.id, rows[start : start + INGEST_BATCH])
        out["store"] = time.thread_time() - t0
        store.close()
    return {name: 1e6 * seconds / total for name, seconds in out.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--messages", type=int, default=30_000)
    args = parser.parse_args()
    total = max(BATCH, args.messages // BATCH * BATCH)
    cpu, rate = whole(total)
    print(f"ingest, {total:,} messages: {cpu:.1f} µs CPU per message, {rate:,.0f} messages/s wall")
    split = parts(total)
    for name, micros in split.items():
        print(f"  {name:6s} {micros:6.1f} µs per message (one thread)")
    alone = sum(split.values())
    print(f"  sum    {alone:6.1f} µs: at most {1e6 / alone:,.0f} messages/s on one core")


if __name__ == "__main__":
    main()
