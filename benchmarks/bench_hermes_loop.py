"""The exported ``lcm`` in a Hermes-style loop: 10,000 messages without uids.

The loop (``ctxengine_host.testing.hermes_loop``) drives the engine as the
framework's host does: its own history list with no uids and no system prompt,
``compress`` on that list, ``lcm_grep`` with ``messages=``, and, for the current
ABC, ``select_context`` before each model call and ``on_turn_complete`` after.
Prints, per ABC: messages sent and stored (and whether the stored sequence is
exactly the sent one), compactions, request sizes against the window, the set of
system-prompt sizes seen, turns whose request lacked the newest message, time.

    .venv/bin/python benchmarks/bench_hermes_loop.py [--messages 10000] [--window 4000]
"""

from __future__ import annotations

import argparse
import sqlite3
import tempfile
import time
from pathlib import Path

from ctxengine_host.discovery.compat import FrameworkEngineAdapter
from ctxengine_host.testing.context import kit_engine_context
from ctxengine_host.testing.hermes_loop import FACT, run_hermes_loop
from ctxengine_host.tokens import TokenCounter
from ctxengine_lcm.engine import LcmEngine


def run(messages: int, window: int, current_abc: bool) -> dict:
    with tempfile.TemporaryDirectory() as data:
        engine = LcmEngine(context=kit_engine_context("lcm", Path(data), TokenCounter("gpt-4")))
        started = time.perf_counter()
        report = run_hermes_loop(
            FrameworkEngineAdapter(engine),
            messages=messages,
            window=window,
            current_abc=current_abc,
        )
        seconds = time.perf_counter() - started
        with sqlite3.connect(engine.database_path) as db:
            stored = db.execute("SELECT role, content FROM messages ORDER BY seq").fetchall()
        engine.dispose()
    return {
        "abc": "current" if current_abc else "released",
        "sent": len(report.sent),
        "stored": len(stored),
        "stored_exactly_once": stored == report.sent,
        "compactions": report.compactions,
        "largest_request": report.largest_request,
        "window": window,
        "system_prompt_sizes": sorted(report.system_sizes),
        "newest_missing": len(report.newest_missing),
        "fact_found_by_lcm_grep": FACT in report.grep_answer,
        "seconds": round(seconds, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--window", type=int, default=4_000)
    args = parser.parse_args()
    for current_abc in (False, True):
        result = run(args.messages, args.window, current_abc)
        print("  ".join(f"{k}={v}" for k, v in result.items()))


if __name__ == "__main__":
    main()
