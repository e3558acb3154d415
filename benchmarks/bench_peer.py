"""Our exported ``lcm`` side by side with the peer LCM engine, through the same ABC-style loop.

Both engines see the same synthetic coding-agent session (a user ask, an assistant tool
call, a tool result of code or test output, an assistant answer; 50 facts planted across
the session) through the framework ABC the way a framework host drives it: the host keeps
the uid-less history, calls ``should_compress_preflight`` when a turn starts (the peer
stores the new messages there), ``update_from_response``, ``should_compress`` and, when that
says so, ``compress`` (whose result replaces its list), then ``on_turn_complete`` (where
the export stores them). Ours is
``LcmEngine`` wrapped in the shipped
:class:`~ctxengine_host.discovery.compat.FrameworkEngineAdapter`;
the peer is its own ``LCMEngine`` imported from ``--peer-src`` (its ``agent.*`` imports are
answered by our shim, its summaries by the same offline summarizer as ours). Runs are
interleaved per size (ours, peer, ours, peer ...) in fresh subprocesses, so a slow phase of
the shared machine hits both.

Figures per size: per-turn engine time of turns that did not compact (median / p95),
session wall (the engine's setup, reported apart: imports, the store's first open and, for
ours, the tokenizer's one-time load; the peer counts chars / 4), ``lcm_grep`` keyword
query time (median / p95) and keyword recall (planted message among the top 10) after the
session, peak RSS above the baseline taken before the engine was built, ingest rate
(messages stored per second of engine time spent storing).

    .venv/bin/python benchmarks/bench_peer.py                      # ours alone, 1k and 10k
    .venv/bin/python benchmarks/bench_peer.py --peer-src /tmp/hermes-lcm
    .venv/bin/python benchmarks/bench_peer.py --peer-src /tmp/hermes-lcm --sizes 1000,10000,100000
    .venv/bin/python benchmarks/bench_peer.py --sizes 100000 \
        --postgres postgresql://postgres@127.0.0.1:5432/test     # ours on SQLite and PostgreSQL

With ``--postgres``, ours also runs with its store in a fresh schema of that database (the
same session and queries), and a second table gives the store's figures side by side.

The peer's source is never copied into this repository; point ``--peer-src`` at a checkout
(its commit is printed when the directory is a git work tree or carries ``PEER_COMMIT``).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

FACTS = 50
WINDOW = 16_000
GREP_REPEATS = 4
_COMMON = (  # noqa: SIM905
    "config server client request response cache queue worker task session token message "
    "function class module import return path data table index query result value option "
    "timeout retry limit batch stream buffer event handler deploy release branch commit "
    "review patch fix change update check parse load save send fetch store lock thread"
).split()
_SYLLABLES = "ka lo mi nu pe ra si to vu xe ba de fi go hu ja ke li mo ny".split()  # noqa: SIM905
#: A code base's identifiers: 8,000 made-up words, so no two tool outputs look alike.
_WORDS = _COMMON + [a + b + c for a in _SYLLABLES for b in _SYLLABLES for c in _SYLLABLES]
RARE_WORDS = (  # noqa: SIM905
    "amber basalt cobalt dune ember fjord garnet harbor indigo jasper kelp lagoon mesa "
    "nimbus onyx prairie quartz raven sierra tundra umber violet willow xenon yarrow zinc"
).split()


def fact_keywords(index: int) -> tuple[str, str]:
    """The query's distinctive word for planted fact ``index``, and the value it must find."""
    return RARE_WORDS[index % len(RARE_WORDS)], f"K{index:03d}Z"


def fact_queries() -> list[tuple[str, str]]:
    """The keyword query of each planted fact, and the value its answer must hold."""
    return [(f"{word} service key", value) for word, value in map(fact_keywords, range(FACTS))]


def session_turns(messages: int, seed: int = 17) -> list[list[dict[str, Any]]]:
    """Turns of four messages each; fact ``i`` is the tool result of a turn spread evenly.

    The first word of every fact also occurs in later filler, so a search that ranks only
    the newest matches loses the old facts."""
    rng = random.Random(seed)
    turns_count = max(1, messages // 4)
    planted = {int(i * turns_count / FACTS) + (turns_count // (2 * FACTS)): i for i in range(FACTS)}
    turns = []
    for turn in range(turns_count):
        call_id = f"call_{turn}"
        filler = " ".join(
            rng.choice(_COMMON) if rng.random() < 0.4 else rng.choice(_WORDS) for _ in range(60)
        )
        echo = RARE_WORDS[rng.randrange(len(RARE_WORDS))]  # fact words come back in later filler
        if turn in planted:
            first, second = fact_keywords(planted[turn])
            result = f"PASS: the {first} service key is {second}; {filler}"
        else:
            result = f"def handler_{turn}(request):\n    # {echo} {filler}\n    return {turn}"
        turns.append(
            [
                {"role": "user", "content": f"Step {turn}: look at handler_{turn} ({echo})."},
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [
                        {
                            "id": call_id,
                            "type": "function",
                            "function": {
                                "name": "read_file",
                                "arguments": json.dumps({"path": f"src/h{turn}.py"}),
                            },
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": call_id, "content": result},
                {"role": "assistant", "content": f"handler_{turn} looks fine; next."},
            ]
        )
    return turns


def chars4(messages: list[dict[str, Any]]) -> int:
    """The host's own rough prompt size (chars/4), the same for both engines."""
    return sum(len(str(m.get("content") or "")) + 16 for m in messages) // 4


def rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def build_ours(data: Path, database: str | None = None) -> tuple[Any, dict[str, Any]]:
    """Our engine behind the framework adapter; its store in ``data`` or ``database`` (a
    PostgreSQL URL)."""
    from ctxengine_host.discovery.compat import FrameworkEngineAdapter
    from ctxengine_host.testing.context import kit_engine_context
    from ctxengine_host.tokens import TokenCounter
    from ctxengine_lcm.engine import LcmEngine

    counter = TokenCounter("gpt-4")
    counter.count_text("load the encoder")  # a one-time cost, reported with the setup
    config = {"database": database} if database else None
    engine = LcmEngine(config=config, context=kit_engine_context("lcm", data, counter))
    return FrameworkEngineAdapter(engine), {"engine": "ours"}


def build_peer(data: Path, peer_src: Path) -> tuple[Any, dict[str, Any]]:
    from ctxengine_host.discovery.compat import import_plugin_package, install_framework_shims
    from ctxengine_host.discovery.compat.shims import route_auxiliary_client

    install_framework_shims()
    route_auxiliary_client()
    package = import_plugin_package(peer_src)
    config_module = importlib.import_module(f"{package.__name__}.config")
    engine_module = importlib.import_module(f"{package.__name__}.engine")
    config = config_module.LCMConfig()
    config.database_path = str(data / "peer.db")
    return engine_module.LCMEngine(config=config, hermes_home=str(data)), {"engine": "peer"}


def percentile(values: list[float], share: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


@contextmanager
def fresh_schema(server: str | None) -> Iterator[str | None]:
    """The URL of a new, migrated schema in ``server``'s database for one run, dropped
    after it (None without a server)."""
    if server is None:
        yield None
        return
    import psycopg

    from ctxengine_host.stores.pg import close_pools, migrate, parse_url

    name = f"bench_peer_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    url = f"{server}{'&' if '?' in server else '?'}schema={name}"
    try:
        migrate(parse_url(url))
        yield url
    finally:
        close_pools()
        with psycopg.connect(server, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')


def run_one(
    which: str, messages: int, peer_src: str | None, postgres: str | None = None
) -> dict[str, Any]:
    """One session of ``messages`` messages through one engine; the figures as a dict.
    ``ours-pg`` is ours with its store in a fresh schema of ``postgres``."""
    with fresh_schema(postgres if which == "ours-pg" else None) as database:
        return run_session(which, session_turns(messages), fact_queries(), peer_src, database)


def run_session(
    which: str,
    turns: list[list[dict[str, Any]]],
    queries: list[tuple[str, str]],
    peer_src: str | None,
    database: str | None,
) -> dict[str, Any]:
    """``turns`` through one engine in the ABC loop, then each of ``queries`` (keywords, and
    the text an answer must hold to count as found) ``GREP_REPEATS`` times; the figures."""
    baseline = rss_mib()
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp)
        import_started = time.perf_counter()
        engine, _ = (
            build_peer(data, Path(peer_src)) if which == "peer" else build_ours(data, database)
        )
        setup = time.perf_counter() - import_started
        engine.update_model("gpt-4", WINDOW)
        engine.on_session_start("bench-peer")
        history: list[dict[str, Any]] = []
        per_turn: list[float] = []
        compaction: list[float] = []
        engine_seconds = 0.0
        stored = 0
        started = time.perf_counter()
        for turn in turns:
            history.extend(turn)
            tokens = chars4(history)
            t0 = time.perf_counter()
            engine.should_compress_preflight(history)
            engine.update_from_response(
                {"prompt_tokens": tokens, "completion_tokens": 12, "total_tokens": tokens + 12}
            )
            compacted = False
            if engine.should_compress(tokens):
                before = engine.compression_count
                result = engine.compress(history, current_tokens=tokens)
                compacted = engine.compression_count != before or len(result) < len(history)
                history = result
            engine.on_turn_complete(history, usage=None)
            spent = time.perf_counter() - t0
            engine_seconds += spent
            stored += len(turn)
            (compaction if compacted else per_turn).append(spent * 1000)
        wall = time.perf_counter() - started
        grep_ms: list[float] = []
        found = 0
        for words, sought in queries:
            query = {"query": words} if which == "peer" else {"pattern": words, "limit": 10}
            answer = ""
            for _ in range(GREP_REPEATS):
                t0 = time.perf_counter()
                answer = engine.handle_tool_call("lcm_grep", query, messages=history)
                grep_ms.append((time.perf_counter() - t0) * 1000)
            found += sought in answer
        engine.on_session_end("bench-peer", history)
        peak = rss_mib() - baseline
        shutdown = getattr(engine, "shutdown", None) or getattr(
            getattr(engine, "engine", None), "dispose", None
        )
        if callable(shutdown):
            shutdown()
    return {
        "engine": which,
        "messages": sum(len(turn) for turn in turns),
        "setup_s": round(setup, 3),
        "turn_ms_p50": round(statistics.median(per_turn), 3) if per_turn else 0.0,
        "turn_ms_p95": round(percentile(per_turn, 0.95), 3),
        "compactions": len(compaction),
        "compaction_ms_p50": round(statistics.median(compaction), 2) if compaction else 0.0,
        "wall_s": round(wall, 2),
        "grep_ms_p50": round(statistics.median(grep_ms), 3),
        "grep_ms_p95": round(percentile(grep_ms, 0.95), 3),
        "recall": f"{found}/{len(queries)}",
        "peak_rss_mib": round(peak, 1),
        "ingest_msg_s": round(stored / engine_seconds) if engine_seconds else 0,
    }


def peer_commit(peer_src: Path) -> str:
    marker = peer_src / "PEER_COMMIT"
    if marker.is_file():
        return marker.read_text().strip()
    try:
        out = subprocess.run(
            ["git", "-C", str(peer_src), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        )
        return out.stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown (not a git work tree; write the commit to PEER_COMMIT)"


def in_subprocess(
    which: str, messages: int, peer_src: str | None, postgres: str | None
) -> dict[str, Any]:
    command = [__file__, "--one", which, "--sizes", str(messages)]
    if peer_src:
        command += ["--peer-src", peer_src]
    if postgres:
        command += ["--postgres", postgres]
    return run_child(command, f"{which} at {messages}")


def run_child(arguments: list[str], what: str) -> dict[str, Any]:
    """The figures a fresh Python process running ``arguments`` prints as its last line
    (a fixed hash seed: set orders alike in every run)."""
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    out = subprocess.run([sys.executable, *arguments], capture_output=True, text=True, env=env)
    if out.returncode:
        raise SystemExit(f"{what} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


ROWS = (
    ("per-turn engine ms excl. compaction, p50", "turn_ms_p50"),
    ("per-turn engine ms excl. compaction, p95", "turn_ms_p95"),
    ("compactions", "compactions"),
    ("compaction ms, p50", "compaction_ms_p50"),
    ("session wall s", "wall_s"),
    ("engine setup s (import, first open, tokenizer load)", "setup_s"),
    ("lcm_grep keyword ms, p50", "grep_ms_p50"),
    ("lcm_grep keyword ms, p95", "grep_ms_p95"),
    ("keyword recall, sought text in top 10", "recall"),
    ("peak RSS above baseline MiB", "peak_rss_mib"),
    ("ingest msg/s (engine time)", "ingest_msg_s"),
)


def table(results: dict[int, dict[str, list[dict[str, Any]]]], with_peer: bool) -> str:
    head = (
        "| figure | size | peer | ours | ours/peer |" if with_peer else "| figure | size | ours |"
    )
    lines = [head, "|---" * (5 if with_peer else 3) + "|"]
    for label, key in ROWS:
        for size, runs in sorted(results.items()):
            ours = _best(runs["ours"], key)
            if not with_peer:
                lines.append(f"| {label} | {size:,} | {ours} |")
                continue
            peer = _best(runs["peer"], key)
            ratio = (
                f"{ours / peer:.2f}x"
                if isinstance(ours, int | float) and isinstance(peer, int | float) and peer
                else ""
            )
            lines.append(f"| {label} | {size:,} | {peer} | {ours} | {ratio} |")
    return "\n".join(lines)


#: Ours on SQLite and on PostgreSQL (``--postgres``): the figures the store decides.
STORE_ROWS = (
    ("lcm_grep keyword ms, p50", "grep_ms_p50"),
    ("lcm_grep keyword ms, p95", "grep_ms_p95"),
    ("keyword recall, sought text in top 10", "recall"),
    ("per-turn engine ms excl. compaction, p50", "turn_ms_p50"),
    ("session wall s", "wall_s"),
)


def store_table(results: dict[int, dict[str, list[dict[str, Any]]]]) -> str:
    lines = ["| figure | size | SQLite | PostgreSQL | PostgreSQL/SQLite |", "|---" * 5 + "|"]
    for label, key in STORE_ROWS:
        for size, runs in sorted(results.items()):
            sqlite, pg = _best(runs["ours"], key), _best(runs["ours-pg"], key)
            ratio = f"{pg / sqlite:.2f}x" if isinstance(pg, int | float) and sqlite else ""
            lines.append(f"| {label} | {size:,} | {sqlite} | {pg} | {ratio} |")
    return "\n".join(lines)


def _best(runs: list[dict[str, Any]], key: str) -> Any:
    """The median over repeated runs (the run itself for one)."""
    values = [run[key] for run in runs]
    if isinstance(values[0], str):
        return values[0]
    return round(statistics.median(values), 3)


POSTGRES_HELP = (
    "also run ours with its store in PostgreSQL: a database URL (each run gets a fresh schema "
    "in it, dropped after), e.g. postgresql://postgres@127.0.0.1:5432/test"
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--peer-src", help="a checkout of the peer engine (never committed)")
    parser.add_argument("--sizes", default="1000,10000", help="comma-separated message counts")
    parser.add_argument("--repeats", type=int, default=1, help="interleaved runs per engine")
    parser.add_argument("--json", action="store_true", help="print the raw runs as JSON too")
    parser.add_argument("--postgres", help=POSTGRES_HELP)
    parser.add_argument("--one", choices=("ours", "peer", "ours-pg"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s]
    if args.one:
        print(json.dumps(run_one(args.one, sizes[0], args.peer_src, args.postgres)))
        return
    engines = ["ours", "peer"] if args.peer_src else ["ours"]
    engines += ["ours-pg"] if args.postgres else []
    results: dict[int, dict[str, list[dict[str, Any]]]] = {}
    for size in sizes:
        results[size] = {name: [] for name in engines}
        for _ in range(args.repeats):
            for name in engines:
                results[size][name].append(in_subprocess(name, size, args.peer_src, args.postgres))
    if args.peer_src:
        print(f"peer: {Path(args.peer_src).resolve()} at commit {peer_commit(Path(args.peer_src))}")
    print(f"window {WINDOW} tokens, host counts chars/4, {FACTS} planted facts")
    print(table(results, bool(args.peer_src)))
    if args.postgres:
        print(f"\nours, its store on SQLite and on PostgreSQL ({args.postgres}):")
        print(store_table(results))
    if args.json:
        print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
