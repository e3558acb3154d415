"""``lcm_grep`` keyword queries on a kept bench_peer store: SQL statements and CPU per query.

Builds ours through bench_peer's loop once (``--build``; minutes at 100,000 messages),
keeps the store in ``--dir``, then runs bench_peer's 50 keyword queries four times each
and prints the full-text segments of each index, statements per query (top level; FTS5's
own lookups not counted), CPU time of the calling thread per query (p50 / p95: machine
load inflates wall time far more) and recall. Point ``PYTHONPATH`` at another checkout's
``src`` to measure that code on the same store, one version after the other:

    .venv/bin/python benchmarks/bench_grep_cpu.py --dir /tmp/d100k --build --messages 100000
    PYTHONPATH=/path/to/other/src .venv/bin/python benchmarks/bench_grep_cpu.py --dir /tmp/d100k
    .venv/bin/python benchmarks/bench_grep_cpu.py --dir /tmp/d100k

``--rounds N`` runs the 50 queries N times and measures nothing, for callgrind: the
instructions of a query are those of ``--rounds 2`` less ``--rounds 0``, over 100 (a
count the machine's load does not move, where CPU time moves by a third within an hour):

    valgrind --tool=callgrind --callgrind-out-file=/dev/null .venv/bin/python \
        benchmarks/bench_grep_cpu.py --dir /tmp/d100k --rounds 2    # and --rounds 0
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Any

import bench_peer as peer


def open_ours(directory: Path) -> Any:
    engine, _ = peer.build_ours(directory)
    engine.update_model("gpt-4", peer.WINDOW)
    engine.on_session_start("bench-peer")
    return engine


def build(directory: Path, messages: int) -> None:
    """bench_peer's loop for ours, the host's final history kept beside the store."""
    directory.mkdir(parents=True, exist_ok=True)
    engine = open_ours(directory)
    history: list[dict[str, Any]] = []
    for turn in peer.session_turns(messages):
        history.extend(turn)
        tokens = peer.chars4(history)
        engine.should_compress_preflight(history)
        usage = {"prompt_tokens": tokens, "completion_tokens": 12, "total_tokens": tokens + 12}
        engine.update_from_response(usage)
        if engine.should_compress(tokens):
            history = engine.compress(history, current_tokens=tokens)
        engine.on_turn_complete(history, usage=None)
    (directory / "history.json").write_text(json.dumps(history))


def keyword_query(index: int) -> dict[str, Any]:
    """bench_peer's keyword query for planted fact ``index``."""
    return {"pattern": f"{peer.fact_keywords(index)[0]} service key", "limit": 10}


def measure(directory: Path) -> dict[str, Any]:
    engine = open_ours(directory)
    history = json.loads((directory / "history.json").read_text())
    statements: list[str] = []
    engine.engine.store._conn.set_trace_callback(
        lambda sql: None if sql.startswith("--") else statements.append(sql)
    )
    cpu: list[float] = []
    found = 0
    for index in range(peer.FACTS):
        query = keyword_query(index)
        value = peer.fact_keywords(index)[1]
        answer = ""
        for _ in range(peer.GREP_REPEATS):
            started = time.thread_time()
            answer = engine.handle_tool_call("lcm_grep", query, messages=history)
            cpu.append((time.thread_time() - started) * 1000)
        found += value in answer
    calls = peer.FACTS * peer.GREP_REPEATS
    engine.engine.store._conn.set_trace_callback(None)
    return {
        "fts_segments": fts_segments(engine.engine.store._conn),
        "statements_per_grep": round(len(statements) / calls, 1),
        "cpu_ms_p50": round(statistics.median(cpu), 2),
        "cpu_ms_p95": round(peer.percentile(cpu, 0.95), 2),
        "recall": f"{found}/{peer.FACTS}",
    }


def fts_segments(conn: Any) -> dict[str, int]:
    """Segments of each full-text index: each is looked up for every term of a search."""
    return {
        fts: conn.execute(f"SELECT count(DISTINCT segid) FROM {fts}_idx").fetchone()[0]
        for fts in ("messages_fts", "summaries_fts")
    }


def run_rounds(directory: Path, rounds: int) -> None:
    """The 50 queries ``rounds`` times after one warm-up query (imports, caches, the
    store's first read), with nothing measured: the difference of two callgrind runs is
    the queries' instructions alone."""
    engine = open_ours(directory)
    history = json.loads((directory / "history.json").read_text())
    queries = [keyword_query(index) for index in range(peer.FACTS)]
    engine.handle_tool_call("lcm_grep", queries[0], messages=history)
    for _ in range(rounds):
        for query in queries:
            engine.handle_tool_call("lcm_grep", query, messages=history)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", required=True, help="where the store is kept")
    parser.add_argument("--build", action="store_true", help="build the store first")
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument(
        "--rounds", type=int, help="run the queries this many times, unmeasured (callgrind)"
    )
    args = parser.parse_args()
    if args.build:
        build(Path(args.dir), args.messages)
    if args.rounds is not None:
        run_rounds(Path(args.dir), args.rounds)
        return
    print(json.dumps(measure(Path(args.dir))))


if __name__ == "__main__":
    main()
