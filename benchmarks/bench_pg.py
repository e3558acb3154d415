"""PostgreSQL backends: the same LCM history on SQLite and PostgreSQL, and host processes
sharing one database.

Opt-in (not a test); needs the server on 127.0.0.1:5432 (``--server`` to change).

1. Builds two LCM stores with the generator and fast summarizer of
   ``bench_lcm_scale.py`` (N messages, compacting while building), one SQLite file and one
   PostgreSQL database, then times on each in turn (so machine load hits both alike):
   ``select_context`` after a new message, ``lcm_grep`` full text (rare term), relevance
   (common term), keyword (``<word> service key``, as ``bench_peer`` asks) and regex.
   Target: PostgreSQL within 3x of SQLite (wall time: the server's work counts).
2. Turns per second with 1, 2 and 4 host processes on one database (transcripts and LCM
   on PostgreSQL, 4 sessions per process, the host's extractive summarizer), to see where
   throughput stops growing on this machine.

    .venv/bin/python benchmarks/bench_pg.py --messages 100000
    .venv/bin/python benchmarks/bench_pg.py --messages 20000 --seconds 5 --json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import bench_lcm_scale as scale
import psycopg

from ctxengine_host.contract.context import EngineContext
from ctxengine_host.stores.pg import migrate, parse_url
from ctxengine_lcm.engine import LcmEngine

SAMPLES = 40
SESSIONS_PER_PROCESS = 4


def make_engine(database: str, data_dir: Path) -> LcmEngine:
    context = EngineContext(
        engine_name="lcm",
        data_dir=data_dir,
        count_tokens=scale.make_counter(),
        summarize=scale.fast_summarize,
    )
    engine = LcmEngine(config={"database": database}, context=context)
    engine.update_model("gpt-4", scale.CONTEXT_LENGTH)
    engine.on_session_start("bench")
    return engine


def side_by_side(
    engines: dict[str, LcmEngine], generators: dict[str, scale.Generator]
) -> dict[str, dict[str, float]]:
    """p50 / p95 wall milliseconds of each operation on each backend.

    ``generators`` are the ones each store was built with: their uids continue after the
    built messages, so every timed ``select_context`` follows a genuinely new message (a
    fresh generator's uids would already be stored, and the ingest would store nothing).
    """
    timers = {name: scale.Timer() for name in engines}
    counts = {name: stored_messages(engine) for name, engine in engines.items()}
    for engine in engines.values():
        engine.select_context(scale.HEAD, budget_tokens=scale.BUDGET)
    for i in range(SAMPLES):
        for name, engine in engines.items():
            timer = timers[name]
            stored = engine.ingest("bench", generators[name].messages(4)).count
            assert stored == 4, f"{name}: the ingest stored {stored} of 4 new messages"
            timer.time(
                "select_context",
                lambda e=engine: e.select_context(scale.HEAD, budget_tokens=scale.BUDGET),
            )
            rare = {"pattern": f"zqxrare{i % 2}", "limit": 50, "scope": "messages"}
            timer.time("grep_rare", lambda e=engine, a=rare: scale.grep(e, a))
            common = {"pattern": scale.COMMON_TERM, "limit": 50, "sort": "relevance"}
            out = timer.time("grep_relevance", lambda e=engine, a=common: scale.grep(e, a))
            assert out["count"] >= 40, (name, out)
            word, _ = scale.fact_keywords(i % scale.FACTS)
            keyword = {"pattern": f"{word} service key", "limit": 10}
            timer.time("grep_keyword", lambda e=engine, a=keyword: scale.grep(e, a))
            regex = {"pattern": r"zqxrare\d", "mode": "regex", "limit": 5, "scope": "messages"}
            timer.time("grep_regex", lambda e=engine, a=regex: scale.grep(e, a))
    for name, engine in engines.items():
        grown = stored_messages(engine) - counts[name]
        assert grown == 4 * SAMPLES, f"{name}: {grown} messages stored, not {4 * SAMPLES}"
    return {
        name: {
            f"{op}_{q}": round(scale.percentile(values, p), 2)
            for op, values in timer.wall.items()
            for q, p in (("p50", 0.5), ("p95", 0.95))
        }
        for name, timer in timers.items()
    }


def stored_messages(engine: LcmEngine) -> int:
    """The message count of the engine's conversation, as the store holds it."""
    return engine.store.conversation(engine._conversation()).message_count


# Host processes on one database.


def worker(config: str, seconds: float, start_at: float, tag: str) -> None:
    """Drive sessions turn after turn from ``start_at`` for ``seconds``; print the count."""
    from ctxengine_host.runtime.host import ContextHost

    words = " ".join(scale._WORDS[:120])
    with ContextHost.from_config(config, model="gpt-4", context_length=8192) as host:
        sessions = [
            host.open_session(f"{tag}-{n}-{uuid.uuid4().hex[:6]}")
            for n in range(SESSIONS_PER_PROCESS)
        ]
        time.sleep(max(0.0, start_at - time.time()))
        turns, stop = 0, start_at + seconds
        while time.time() < stop:
            session = sessions[turns % len(sessions)]
            session.add_user_message(f"turn {turns}: {words}")
            request = session.build_request()
            usage = {"prompt_tokens": request.estimated_tokens, "completion_tokens": 40}
            session.record_response(
                {"role": "assistant", "content": f"done {turns} {words}"}, usage
            )
            session.finish_turn()
            turns += 1
    print(json.dumps({"turns": turns}), flush=True)


def throughput(url: str, processes: int, seconds: float, directory: Path) -> float:
    config = directory / f"host-{processes}.toml"
    config.write_text(
        f'[context]\nengine = "lcm"\nreserve_output_tokens = 1024\n[store]\nurl = "{url}"\n'
        f'[engines.lcm]\ndatabase = "{url}"\n',
        encoding="utf-8",
    )
    start_at = time.time() + 4.0  # every process has imported and opened its sessions
    command = [sys.executable, __file__, "--worker", str(config), str(seconds), str(start_at)]
    procs = [
        subprocess.Popen([*command, f"p{processes}w{n}"], stdout=subprocess.PIPE, text=True)
        for n in range(processes)
    ]
    turns = 0
    for proc in procs:
        out, _ = proc.communicate(timeout=seconds + 120)
        if proc.returncode != 0:
            raise RuntimeError(f"worker failed ({proc.returncode})")
        turns += json.loads(out.strip().splitlines()[-1])["turns"]
    return turns / seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--seconds", type=float, default=10.0, help="per throughput run")
    parser.add_argument("--server", default="postgresql://postgres@127.0.0.1:5432/test")
    parser.add_argument(
        "--processes",
        type=lambda text: [int(n) for n in text.split(",") if n],
        default=[1, 2, 4],
        help="host process counts for the throughput runs (comma-separated; empty: none)",
    )
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--worker", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        config, seconds, start_at, tag = args.worker
        worker(config, float(seconds), float(start_at), tag)
        return

    name = f"ctxengine_bench_{os.getpid()}"
    with psycopg.connect(args.server, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    url = urlunsplit(urlsplit(args.server)._replace(path=f"/{name}"))
    figures: dict[str, Any] = {"messages": args.messages}
    try:
        migrate(parse_url(url))
        with tempfile.TemporaryDirectory() as tmp:
            directory = Path(tmp)
            engines = {
                "sqlite": make_engine(str(directory / "lcm.db"), directory),
                "postgresql": make_engine(url, directory),
            }
            generators = {backend: scale.Generator() for backend in engines}
            for backend, engine in engines.items():
                started = time.perf_counter()
                built = scale.build(engine, generators[backend], args.messages)
                figures[f"build_{backend}"] = {
                    "seconds": round(time.perf_counter() - started, 1),
                    "ingest_msgs_per_s": round(built["ingest_msgs_per_s"]),
                }
                log(f"built {backend}: {figures[f'build_{backend}']}")
            with psycopg.connect(parse_url(url).conninfo, autocommit=True) as conn:
                # What autovacuum does after a bulk load (a server may have it off: the CI
                # one does): without it, compaction's dead context items stay in the table.
                conn.execute("VACUUM ANALYZE")
            per_backend = side_by_side(engines, generators)
            figures.update(per_backend)
            figures["ratio_pg_over_sqlite_p50"] = {
                key.removesuffix("_p50"): round(
                    per_backend["postgresql"][key] / max(per_backend["sqlite"][key], 1e-6), 2
                )
                for key in per_backend["sqlite"]
                if key.endswith("_p50")
            }
            for engine in engines.values():
                engine.dispose()
            rates = {}
            for processes in args.processes:
                rates[processes] = round(throughput(url, processes, args.seconds, directory), 1)
                log(f"{processes} process(es): {rates[processes]} turns/s")
            figures["turns_per_s"] = rates
            figures["load_average"] = [round(x, 1) for x in os.getloadavg()]
    finally:
        from ctxengine_host.stores.pg import close_pools

        close_pools()
        with psycopg.connect(args.server, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    if args.json:
        print(json.dumps(figures, indent=2))
    else:
        for key, value in figures.items():
            print(f"{key}: {value}")


def log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
