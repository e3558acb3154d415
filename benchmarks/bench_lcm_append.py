"""LCM store: µs per message of ``SqliteStore.append``, one message per call (as an agent
loop appends) or in calls of ``INGEST_BATCH``.

Opt-in (not a test). Stores the first ``--messages`` non-system messages of a session
file in a new store on one core; the machine's load moves the figure, so alternate the
codes compared (``PYTHONPATH`` at each checkout's ``src``) and repeat:

    .venv/bin/python benchmarks/bench_lcm_append.py examples/sessions/long-2000.jsonl.gz
    .venv/bin/python benchmarks/bench_lcm_append.py examples/sessions/long-2000.jsonl.gz --bulk
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from ctxengine_host.replay.sessionfile import load_session
from ctxengine_host.tokens import TokenCounter
from ctxengine_lcm.engine import INGEST_BATCH
from ctxengine_lcm.render import to_new_message
from ctxengine_lcm.sqlite_store import SqliteStore

#: The core the benchmark runs on.
CORE = 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("session", help="a session file (.jsonl or .jsonl.gz)")
    parser.add_argument("--messages", type=int, default=6_000)
    parser.add_argument("--bulk", action="store_true", help=f"calls of {INGEST_BATCH:,}")
    args = parser.parse_args()
    os.sched_setaffinity(0, {CORE})
    messages = [m for m in load_session(args.session).messages if m.get("role") != "system"]
    messages = messages[: args.messages]
    counter = TokenCounter()
    rows = [
        to_new_message(m, f"u{n}", counter.count_message(m), 1.0e9 + n, None)
        for n, m in enumerate(messages)
    ]
    per_call = INGEST_BATCH if args.bulk else 1
    with tempfile.TemporaryDirectory() as directory:
        store = SqliteStore(Path(directory) / "lcm.db")
        conversation = store.current_conversation("bench").id
        wall, cpu = time.perf_counter(), time.process_time()
        for start in range(0, len(rows), per_call):
            store.append(conversation, rows[start : start + per_call])
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        store.close()
    print(
        f"{len(rows):,} messages, {per_call:,} per call: {1e6 * wall / len(rows):.0f} µs "
        f"per message wall, {1e6 * cpu / len(rows):.0f} µs CPU"
    )


if __name__ == "__main__":
    main()
