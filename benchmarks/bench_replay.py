"""Wall time of ``ctxengine replay`` on the committed 2,000-turn sample (target: < 60 s).

Runs the CLI in a subprocess, as a user would (``--json`` so the report's own
timings can be read back), and prints: the end-to-end wall time, the replay's
wall time, the time inside engine calls, the host's share, the CPU user time of
the process, and per-turn figures.

With ``--against SRC`` (the ``src`` folder of another checkout, e.g. a ``git worktree``
of an older commit) the same replay runs with that code too, alternating (this code,
that code, ...), and the ratios of their medians are printed: on a shared machine a
slow phase then hits both. Run it without ``taskset``: a replay pins itself to one core
(``--all-cores`` opts out) where older code may not, and ``taskset`` would hand the older
code that part of the design.

    .venv/bin/python benchmarks/bench_replay.py [--engine legacy] [--runs 1] [--json]
    .venv/bin/python benchmarks/bench_replay.py --engine lcm --context-length 32768 \
        --against /tmp/base/src --runs 3
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "examples" / "sessions" / "long-2000.jsonl.gz"
TARGET_SECONDS = 60.0


def isolated_home(home: str) -> dict[str, str]:
    """Environment variables that keep a run's config, data and quarantine under ``home``
    (a user's own settings and stores must not change the figures, nor be written)."""
    return {
        "XDG_CONFIG_HOME": f"{home}/config",
        "XDG_DATA_HOME": f"{home}/data",
        "CTXENGINE_DATA_DIR": f"{home}/data/ctxengine",
        "CTXENGINE_QUARANTINE_FILE": f"{home}/quarantine.jsonl",
    }


def run_once(engine: str, context_length: int | None = None, src: Path | None = None) -> dict:
    """One replay in a fresh process; ``src``: run that checkout's code instead of ours."""
    command = [sys.executable, "-m", "ctxengine_host.cli", "replay", str(SAMPLE)]
    command += ["--engine", engine, "--json"]
    if context_length is not None:
        command += ["--context-length", str(context_length)]
    with tempfile.TemporaryDirectory(prefix="bench-replay-") as home:
        env = {
            **os.environ,
            **({"PYTHONPATH": str(src)} if src is not None else {}),
            **isolated_home(home),
        }
        started = time.perf_counter()
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime
        result = subprocess.run(
            command,
            capture_output=True,
            text=True,
            env=env,
            check=False,
        )
        elapsed = time.perf_counter() - started
        cpu_user = resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime - before
    if result.returncode != 0:
        raise SystemExit(f"replay failed ({result.returncode}):\n{result.stderr}")
    report = json.loads(result.stdout)
    turns = report["turns"]
    turn_ms = sorted(t["turn_ms"] for t in turns)
    summary = report["summary"]
    return {
        "engine": report["engine"]["name"],
        "turns": summary["turns"],
        "provider_calls": summary["provider_calls"],
        "compactions": summary["compactions"],
        "end_to_end_s": round(elapsed, 2),
        "cpu_user_s": round(cpu_user, 2),
        "replay_wall_s": summary["wall_seconds"],
        "engine_s": round(summary["engine_ms_total"] / 1000, 2),
        "host_and_driver_s": round(summary["wall_seconds"] - summary["engine_ms_total"] / 1000, 2),
        "turn_ms_median": round(statistics.median(turn_ms), 2),
        "turn_ms_p95": round(turn_ms[int(len(turn_ms) * 0.95)], 2),
        "turn_ms_max": round(turn_ms[-1], 2),
        "probes_in_context": summary.get("probes_in_context"),
        "probes_search_found": summary.get("probes_search_found"),
    }


#: Figures compared between two checkouts: the median of each, and their ratio.
COMPARED = ("end_to_end_s", "cpu_user_s", "replay_wall_s", "engine_s", "host_and_driver_s")


def compare(engine: str, context_length: int | None, against: Path, runs: int) -> dict:
    """Alternating runs of this code and ``against``'s; medians and ratios (this / that)."""
    ours: list[dict] = []
    theirs: list[dict] = []
    for n in range(runs):
        ours.append(run_once(engine, context_length))
        theirs.append(run_once(engine, context_length, against))
        print(f"bench_replay: pair {n + 1}/{runs} done", file=sys.stderr)
    out: dict = {"engine": engine, "runs": runs, "against": str(against)}
    for key in COMPARED:
        mine = statistics.median(r[key] for r in ours)
        other = statistics.median(r[key] for r in theirs)
        out[key] = {
            "this": [r[key] for r in ours],
            "against": [r[key] for r in theirs],
            "ratio_of_medians": round(mine / other, 3) if other else None,
        }
    for key in ("compactions", "probes_in_context", "probes_search_found"):
        out[key] = {"this": ours[0][key], "against": theirs[0][key]}
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", default="legacy")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--context-length", type=int, help="the replay's window (tokens)")
    parser.add_argument("--against", type=Path, help="another checkout's src folder")
    args = parser.parse_args()
    if args.against is not None:
        if not (args.against / "ctxengine_host").is_dir():
            parser.error(f"--against {args.against}: no ctxengine_host package in it")
        figures = compare(args.engine, args.context_length, args.against.resolve(), args.runs)
        if args.json:
            print(json.dumps(figures, indent=2))
        else:
            for key, value in figures.items():
                print(f"{key:18} {value}")
        return 0
    runs = [run_once(args.engine, args.context_length) for _ in range(args.runs)]
    best = min(runs, key=lambda r: r["end_to_end_s"])
    best["runs"] = args.runs
    best["target_s"] = TARGET_SECONDS
    best["ok"] = best["end_to_end_s"] < TARGET_SECONDS
    if args.json:
        print(json.dumps(best, indent=2))
    else:
        for key, value in best.items():
            print(f"{key:18} {value}")
    return 0 if best["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
