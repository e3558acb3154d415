"""Per-turn cost of ``[isolation] mode = "process"`` against thread mode, side by side in one run.

For each engine, a host in thread mode and a host in process mode (each over
its own temporary store and data directory) run the same turns interleaved
(``add_user_message`` → ``build_request`` → ``record_response`` →
``finish_turn``), in rounds, so machine load hits both modes alike. Two engines:

* ``echo``: a plugins-directory engine whose hooks do nothing, so the figure is
  the isolation cost alone (pipe round trips and pickling of every call);
* ``lcm``: the real LCM engine (its SQLite database opened in the worker).

Also measured: one engine call's round trip (``should_compress`` through the
session's guard), the startup cost a process-mode session pays once (a worker
process started and the engine built in it), and the worker's resident memory.

    .venv/bin/python benchmarks/bench_isolation.py [--turns 40] [--rounds 8] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

from ctxengine_host.config import LoadedConfig, parse_config
from ctxengine_host.runtime.host import ContextHost
from ctxengine_host.stores.quarantine import QuarantineLog

ECHO_ENGINE = textwrap.dedent(
    """
    from ctxengine_host.contract.engine import ContextEngine


    class EchoEngine(ContextEngine):
        name = "echo"

        def clone_for_agent(self):
            return EchoEngine(self.config, self.context)

        def update_from_response(self, usage):
            self.last_prompt_tokens = usage.get("prompt_tokens", 0)

        def should_compress(self, prompt_tokens=None):
            return False

        def ingest(self, session_id, messages):
            return None

        def on_turn_complete(self, messages, usage=None):
            return None

        def compress(self, messages, current_tokens=None, focus_topic=None, force=False):
            return messages
    """
)

MODES = ("thread", "process")


def make_host(root: Path, engine: str, mode: str) -> ContextHost:
    plugins = root / "plugins"
    if not plugins.exists():
        (plugins / "echo").mkdir(parents=True)
        (plugins / "echo" / "plugin.toml").write_text('name = "echo"\n')
        (plugins / "echo" / "__init__.py").write_text(ECHO_ENGINE)
    here = root / f"{engine}-{mode}"
    here.mkdir()
    text = f'[plugins]\ndirectory = "{plugins}"\n[isolation.engines.{engine}]\nmode = "{mode}"\n'
    return ContextHost(
        engine,
        model="gpt-4",
        context_length=128_000,
        config=LoadedConfig(config=parse_config(text, "bench.toml")),
        store_path=here / "transcripts.db",
        data_dir=here / "data",
        quarantine=QuarantineLog(here / "quarantine.jsonl"),
        observers=[],
    )


def turns(session: Any, count: int, start: int) -> float:
    """Seconds per turn over ``count`` turns."""
    began = time.perf_counter()
    for i in range(start, start + count):
        session.add_user_message(f"message {i}: what about the invoice number {i * 7919}?")
        session.build_request()
        session.record_response({"role": "assistant", "content": f"answer {i}"}, None)
        session.finish_turn()
    return (time.perf_counter() - began) / count


def round_trip(session: Any, calls: int = 300) -> float:
    """Seconds per engine call through the guard (a call that does nothing)."""
    began = time.perf_counter()
    for _ in range(calls):
        session.guard.call("should_compress", {"prompt_tokens": 1})
    return (time.perf_counter() - began) / calls


def rss_mb(pid: int | None) -> float | None:
    """Resident memory of a process in MB (Linux; None elsewhere)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    kb = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS"))
    return round(kb / 1024, 1)


def bench_engine(root: Path, engine: str, turns_per_round: int, rounds: int) -> dict[str, Any]:
    hosts = {mode: make_host(root, engine, mode) for mode in MODES}
    try:
        opened: dict[str, Any] = {}
        startup_ms: dict[str, float] = {}
        for mode, host in hosts.items():
            began = time.perf_counter()
            opened[mode] = host.open_session("bench")
            startup_ms[mode] = (time.perf_counter() - began) * 1000
        per_turn: dict[str, list[float]] = {mode: [] for mode in MODES}
        per_call: dict[str, list[float]] = {mode: [] for mode in MODES}
        turns(opened["thread"], 5, 0)  # warm caches on both sides
        turns(opened["process"], 5, 0)
        for r in range(rounds):
            for mode in MODES if r % 2 == 0 else reversed(MODES):
                start = 5 + r * turns_per_round
                per_turn[mode].append(turns(opened[mode], turns_per_round, start) * 1000)
                per_call[mode].append(round_trip(opened[mode]) * 1000)
        result: dict[str, Any] = {"engine": engine, "turns": turns_per_round * rounds}
        for mode in MODES:
            result[mode] = {
                "turn_ms": round(statistics.median(per_turn[mode]), 3),
                "call_ms": round(statistics.median(per_call[mode]), 4),
                "open_session_ms": round(startup_ms[mode], 1),
            }
        result["worker_rss_mb"] = rss_mb(
            getattr(opened["process"].guard.engine, "worker_pid", None)
        )
        result["overhead_turn_ms"] = round(
            result["process"]["turn_ms"] - result["thread"]["turn_ms"], 3
        )
        result["ratio"] = round(result["process"]["turn_ms"] / result["thread"]["turn_ms"], 2)
        return result
    finally:
        for host in hosts.values():
            host.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=40, help="turns per mode and round")
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-isolation-") as tmp:
        results = [
            bench_engine(Path(tmp), engine, args.turns, args.rounds) for engine in ("echo", "lcm")
        ]
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print(f"{'engine':8} {'mode':8} {'ms/turn':>9} {'ms/call':>9} {'open_session ms':>16}")
    for result in results:
        for mode in MODES:
            row = result[mode]
            print(
                f"{result['engine']:8} {mode:8} {row['turn_ms']:9.3f} {row['call_ms']:9.4f} "
                f"{row['open_session_ms']:16.1f}"
            )
        print(
            f"{result['engine']:8} process - thread: {result['overhead_turn_ms']:+.3f} ms/turn "
            f"(x{result['ratio']}) over {result['turns']} turns per mode; "
            f"a session's worker holds {result['worker_rss_mb']} MB resident"
        )


if __name__ == "__main__":
    main()
