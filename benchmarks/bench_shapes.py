"""Both engines on a single long tool loop and on a multi-turn session, at 16k and 32k (#14).

Generates (deterministically, in a temp directory) a single-loop session of 400 tool-call
steps and a multi-turn session, replays each through the runtime with ``legacy`` and
``lcm`` at both windows, and prints per run: compactions, summaries, omitted-without-cover
(live messages left out of a request with nothing covering them; must be 0), requests cut
by the host, summary tokens written / the session's own tokens, wall time.

    .venv/bin/python benchmarks/bench_shapes.py [--steps 400] [--turns 150] [--json]

Exit status 1 when any run leaves messages out without a cover.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from ctxengine_host.replay.driver import ReplayOptions, replay_file
from ctxengine_host.replay.generator import generate_session, generate_single_loop, write_session
from ctxengine_host.tokens import TokenCounter

ENGINES = ("legacy", "lcm")
WINDOWS = (16_384, 32_768)


def session_files(directory: Path, steps: int, turns: int) -> dict[str, tuple[Path, int]]:
    """The two sessions, each with its own token count (what the summaries are set against)."""
    counter = TokenCounter("gpt-4")
    out = {}
    for name, session in (
        (f"single-loop-{steps}", generate_single_loop(steps, 400)),
        (f"multi-turn-{turns}", generate_session(turns, 7)),
    ):
        path, _ = write_session(directory / f"{name}.jsonl", session)
        out[name] = (path, sum(counter.count_message(m) for m in session.messages))
    return out


def run(path: Path, own_tokens: int, engine: str, window: int, config: Path) -> dict:
    started = time.perf_counter()
    report = replay_file(
        path, ReplayOptions(engine=engine, context_length=window, config_path=str(config))
    )
    wall = time.perf_counter() - started
    s = report.summary()
    summaries = sum(len(r.summary_levels) for r in report.turns)
    return {
        "session": path.stem,
        "engine": engine,
        "window": window,
        "provider_calls": s["provider_calls"],
        "compactions": s["compactions"],
        "summaries": summaries,
        "omitted_without_cover": s["omitted_without_cover"],
        "requests_cut_by_host": s["host_substitutions"],
        "summary_tokens": s["summary_tokens_total"],
        "session_tokens": own_tokens,
        "summary_ratio": round(s["summary_tokens_total"] / own_tokens, 3),
        "window_too_small": s["window_too_small"],
        "wall_seconds": round(wall, 2),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=400, help="single-loop tool-call steps")
    parser.add_argument("--turns", type=int, default=150, help="multi-turn user turns")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-shapes-") as tmp:
        directory = Path(tmp)
        config = directory / "ctxengine.toml"
        config.write_text("")  # defaults only: the user's config must not change the figures
        for path, own in session_files(directory, args.steps, args.turns).values():
            for engine in ENGINES:
                for window in WINDOWS:
                    rows.append(run(path, own, engine, window, config))
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        head = (
            f"{'session':<18} {'engine':<7} {'window':>6} {'calls':>5} {'compact':>7} "
            f"{'summ':>5} {'omitted':>7} {'cut':>4} {'summary/session':>22} {'wall':>6}"
        )
        print(head)
        for r in rows:
            ratio = f"{r['summary_tokens']:,}/{r['session_tokens']:,}={r['summary_ratio']:.2f}"
            print(
                f"{r['session']:<18} {r['engine']:<7} {r['window']:>6} {r['provider_calls']:>5} "
                f"{r['compactions']:>7} {r['summaries']:>5} {r['omitted_without_cover']:>7} "
                f"{r['requests_cut_by_host']:>4} {ratio:>22} {r['wall_seconds']:>5.1f}s"
            )
    return 1 if any(r["omitted_without_cover"] for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
