"""LCM ingest: CPU per message, whole and by part, on ``bench_lcm_scale``'s messages.

Opt-in (not a test). ``bench_lcm_scale`` reports ingest as wall-clock messages per second,
which follows the machine's load; this prints CPU microseconds per message (the process's,
every thread included), which moves far less, the tokenizer's one-time load apart, and
what each part costs on one thread:

- ``count``: the engine's token count of each message (``TokenCounter.count_any``, tiktoken);
- ``rows``: ``render.to_new_message`` (stored columns, extra JSON, version digest);
- ``store``: ``SqliteStore.append`` of those rows in ``INGEST_BATCH``s (rows, indexes, FTS5,
  commit).

``--semantic`` (needs ``ctxengine-lcm[semantic]``) adds what the optional semantic index
costs, in process CPU (the tokenizer runs on its own threads): embedding and storing a
message's vector, which the first relevance search pays instead of ingest (ingest does
no embedding), and a later search that compares the newest ``semantic_max_vectors``.

    .venv/bin/python benchmarks/bench_lcm_ingest.py --messages 30000
    .venv/bin/python benchmarks/bench_lcm_ingest.py --messages 30000 --semantic

``--ingest-only`` runs the ingest alone, for an instruction count that the machine's load
does not move (the messages from 2,001 to 12,000: the difference of the two runs):

    valgrind --tool=callgrind --callgrind-out-file=/dev/null .venv/bin/python \\
        benchmarks/bench_lcm_ingest.py --messages 12000 --ingest-only    # and 2000
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from bench_lcm_scale import BATCH, Generator, make_engine

from ctxengine_host.tokens import TokenCounter
from ctxengine_lcm import render
from ctxengine_lcm.config import LcmConfig
from ctxengine_lcm.engine import INGEST_BATCH
from ctxengine_lcm.sqlite_store import SqliteStore


def whole(total: int) -> tuple[float, float, float]:
    """(process CPU µs per message, wall messages/s, the tokenizer's load in CPU ms) of
    ``LcmEngine.ingest`` in calls of ``BATCH``, compacting between calls as
    ``bench_lcm_scale``'s build does. The tokenizer loads once per process, on the first
    count: timed apart, it is not a message's cost."""
    with tempfile.TemporaryDirectory() as directory:
        engine = make_engine(Path(directory), "fast")
        c0 = time.process_time()
        engine.context.count_tokens("load the tokenizer")
        load_ms = 1e3 * (time.process_time() - c0)
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
    return 1e6 * cpu / total, total / wall, load_ms


def ingest_only(total: int) -> None:
    """``LcmEngine.ingest`` of ``total`` messages in calls of ``BATCH`` and nothing else
    (no compaction, no timing): under ``valgrind --tool=callgrind`` the difference of two
    sizes is the instructions of the messages between them, whatever the machine's load."""
    with tempfile.TemporaryDirectory() as directory:
        engine = make_engine(Path(directory), "fast")
        gen = Generator(size=total)
        for _ in range(0, total, BATCH):
            engine.ingest("bench", gen.messages(BATCH))
        engine.dispose()


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


def semantic(total: int) -> dict[str, float]:
    """Process CPU of the semantic index on ``total`` stored messages: the model's load
    (ms, once per process), embedding and storing (µs per message), and a search over the
    newest ``semantic_max_vectors`` once all are embedded (ms, median of 5)."""
    from ctxengine_lcm.semantic import embedder, index_newest, nearest_messages

    messages = Generator(size=total).messages(total)
    rows = [render.to_new_message(m, m["message_uid"], 1, 1.0, None) for m in messages]
    scanned = LcmConfig().semantic_max_vectors
    out: dict[str, float] = {}
    t0 = time.process_time()
    embedder()
    out["load_ms"] = 1e3 * (time.process_time() - t0)
    with tempfile.TemporaryDirectory() as directory:
        store = SqliteStore(Path(directory) / "ingest.db")
        conversation = store.current_conversation("bench")
        for start in range(0, total, INGEST_BATCH):
            store.append(conversation.id, rows[start : start + INGEST_BATCH])
        t0 = time.process_time()
        done = index_newest(store, [conversation.id], total, float("inf"))
        out["embed_us"] = 1e6 * (time.process_time() - t0) / done
        searches = []
        for query in ("where is the retry limit configured", "which port does the db use") * 3:
            t0 = time.process_time()
            nearest_messages(store, [conversation.id], query, None, None, (20, scanned, 2_400), 0)
            searches.append(time.process_time() - t0)
        out["search_ms"] = 1e3 * statistics.median(searches[1:])
        out["scanned"] = min(total, scanned)
        out["bytes_per_vector"] = len(store.message_vectors([conversation.id], None, None, 1)[0][1])
        store.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--messages", type=int, default=30_000)
    parser.add_argument("--semantic", action="store_true", help="the semantic index's costs")
    parser.add_argument(
        "--ingest-only", action="store_true", help="only ingest (for callgrind), print nothing"
    )
    args = parser.parse_args()
    total = max(BATCH, args.messages // BATCH * BATCH)
    if args.ingest_only:
        ingest_only(total)
        return
    cpu, rate, load_ms = whole(total)
    print(f"tokenizer load (once per process): {load_ms:.0f} ms CPU")
    print(f"ingest, {total:,} messages: {cpu:.1f} µs CPU per message, {rate:,.0f} messages/s wall")
    split = parts(total)
    for name, micros in split.items():
        print(f"  {name:6s} {micros:6.1f} µs per message (one thread)")
    alone = sum(split.values())
    print(f"  sum    {alone:6.1f} µs: at most {1e6 / alone:,.0f} messages/s on one core")
    if args.semantic:
        costs = semantic(total)
        print(
            f"semantic index: model load {costs['load_ms']:.0f} ms; embedding "
            f"{costs['embed_us']:.1f} µs per message (paid by the first search, "
            f"{costs['bytes_per_vector']:.0f} bytes stored); a search over "
            f"{costs['scanned']:,.0f} vectors {costs['search_ms']:.1f} ms (process CPU)"
        )


if __name__ == "__main__":
    main()
