"""Context quality per engine and window: probe answers kept, recalled, and summary quality.

    python benchmarks/bench_quality.py                 # tuning + held-out sets, 32k
    python benchmarks/bench_quality.py --windows 16000,32000 --json
    python benchmarks/bench_quality.py --real conv/*.jsonl   # converted real transcripts
    python benchmarks/bench_quality.py --sets '' --real conv/*.jsonl   # the real set alone
    python benchmarks/bench_quality.py --engines lcm,lcm-semantic   # with the semantic index

Three sets, reported separately (docs/quality.md says why): ``tuning`` (seeds an
engineer may look at while improving an engine), ``held-out`` (seeds never used
while tuning) and ``real`` (session files with hand-written probes, given with
``--real``; each needs its ``NAME.probes.json``). Generated sessions are the
realistic single-task loops of ``generator/realistic.py`` and the generator's
version-1 multi-turn sessions. Per run it prints the probe answers in the final
context, found by the engine's search tool, recovered verbatim, the summary
tokens written, and the summary-quality figures of ``replay/quality.py``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from ctxengine_host.replay.driver import ReplayOptions, replay_file
from ctxengine_host.replay.generator import generate_session, write_session
from ctxengine_host.replay.generator.realistic import generate_realistic_session
from ctxengine_host.replay.quality import evaluate_summaries
from ctxengine_host.replay.sessionfile import load_session

SETS = {
    "tuning": [("realistic", 1), ("realistic", 2), ("realistic", 3), ("multi-turn", 7)],
    "held-out": [("realistic", 101), ("realistic", 102), ("multi-turn", 44)],
}
#: Pseudo-engine: the LCM engine with ``semantic_index = true`` (needs its extra).
SEMANTIC = "lcm-semantic"
REALISTIC_TOOL_CALLS = 400
MULTI_TURN_TURNS = 300


def build(kind: str, seed: int, folder: Path) -> Path:
    """Write one generated session (and its probes) into ``folder``."""
    if kind == "realistic":
        session = generate_realistic_session(REALISTIC_TOOL_CALLS, seed)
    else:
        session = generate_session(MULTI_TURN_TURNS, seed)
    path, _ = write_session(folder / f"{kind}-{seed}.jsonl", session)
    return path


def measure(path: Path, engine: str, window: int) -> dict:
    """One replay's probe and summary figures."""
    options = ReplayOptions(engine=engine, context_length=window)
    if engine == SEMANTIC:
        config = path.with_name("semantic.toml")
        config.write_text("[engines.lcm]\nsemantic_index = true\n", encoding="utf-8")
        options = ReplayOptions(engine="lcm", context_length=window, config_path=str(config))
    report = replay_file(path, options)
    summary = report.summary()
    quality = evaluate_summaries(load_session(path).messages, report.final_messages)
    total = summary["probes_total"] or 1
    return {
        "session": path.name,
        "engine": engine,
        "window": window,
        "probes": summary["probes_total"],
        "in_context": summary["probes_in_context"] / total,
        "found": summary["probes_search_found"] / total,
        "verbatim": summary["probes_expand_verbatim"] / total,
        "compactions": summary["compactions"],
        "summary_tokens": summary["summary_tokens_total"],
        "wall_s": summary["wall_seconds"],
        **{f"q_{k}": v for k, v in quality.to_dict().items() if k != "examples"},
        "q_examples": quality.examples,
    }


def print_table(rows: list[dict], label: str) -> None:
    print(f"\n## {label}")
    header = (
        f"{'session':<22} {'engine':<7} {'window':>6} {'ctx':>5} {'found':>5} {'verb':>5} "
        f"{'comp':>4} {'sum_tok':>7} {'task':>5} {'noise':>5} {'inj':>3} {'score':>5}"
    )
    print(header)
    for r in rows:
        print(
            f"{r['session']:<22} {r['engine']:<7} {r['window']:>6} {r['in_context']:>5.2f} "
            f"{r['found']:>5.2f} {r['verbatim']:>5.2f} {r['compactions']:>4} "
            f"{r['summary_tokens']:>7} {r['q_task_kept']:>5.2f} {r['q_noise_share']:>5.2f} "
            f"{r['q_injected_lines']:>3} {_score(r['q_score']):>5}"
        )
    for engine in sorted({r["engine"] for r in rows}):
        mine = [r for r in rows if r["engine"] == engine]
        mean = {k: sum(r[k] for r in mine) / len(mine) for k in ("in_context", "found")}
        scores = [r["q_score"] for r in mine if r["q_score"] is not None]
        print(
            f"  {engine}: mean in-context {mean['in_context']:.2f}, found "
            f"{mean['found']:.2f}, summary score "
            f"{_score(sum(scores) / len(scores) if scores else None)}, injected lines "
            f"{sum(r['q_injected_lines'] for r in mine)}"
        )


def _score(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--engines", default="legacy,lcm")
    parser.add_argument("--windows", default="32000")
    parser.add_argument("--sets", default="tuning,held-out", help="tuning, held-out")
    parser.add_argument("--real", nargs="*", default=[], help="converted real session files")
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    args = parser.parse_args(argv)
    engines = args.engines.split(",")
    windows = [int(w) for w in args.windows.split(",")]
    results: dict[str, list[dict]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-quality-") as tmp:
        names = [name for name in args.sets.split(",") if name]  # --sets '': the real set alone
        plan = {name: [build(k, s, Path(tmp)) for k, s in SETS[name]] for name in names}
        if args.real:
            plan["real"] = [Path(p) for p in args.real]
        for name, paths in plan.items():
            results[name] = []
            for path in paths:
                for engine in engines:
                    for window in windows:
                        print(
                            f"bench_quality: {name} {path.name} {engine} {window}", file=sys.stderr
                        )
                        results[name].append(measure(path, engine, window))
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        for name, rows in results.items():
            print_table(rows, name)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
