"""Benchmarks of the legacy engine and the extractive summarizer.

(a) speed: one compaction whose middle is about 100k tokens (target: under 1 s),
    and the summarizer alone on that middle;
(b) quality: ``ctxengine replay --json`` of generated 2,000-turn sessions (50
    planted facts) in a 32k window, on the committed sample and on three other
    seeds: requests within budget, share of probes answered from the final
    context (target: at least 60% each), escalation level counts.

    .venv/bin/python benchmarks/bench_legacy.py            # both
    .venv/bin/python benchmarks/bench_legacy.py --speed    # (a) only
    .venv/bin/python benchmarks/bench_legacy.py --quality --seeds 11 22 33
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from ctxengine_host.contract.context import EngineContext
from ctxengine_host.replay.generator import generate_session
from ctxengine_host.summarizer import SummarizerService
from ctxengine_host.tokens import TokenCounter
from ctxengine_legacy import LegacyEngine

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "examples" / "sessions" / "long-2000.jsonl.gz"
CTXENGINE = [sys.executable, "-m", "ctxengine_host.cli"]


def _history_of(tokens: int, counter: TokenCounter) -> list[dict]:
    """The first messages of a generated session adding up to about ``tokens``."""
    session = generate_session(900, seed=7)
    out, total = [], 0
    for message in session.messages:
        out.append(message)
        total += counter.count_message(message)
        if total >= tokens and message["role"] == "assistant" and not message.get("tool_calls"):
            break
    return out


def bench_speed(repeats: int) -> dict:
    counter = TokenCounter()
    service = SummarizerService(None, counter)
    context = EngineContext(
        engine_name="legacy",
        data_dir=Path(tempfile.mkdtemp()),
        count_tokens=counter.count_any,
        summarize=lambda c, target_tokens, focus_topic=None, previous=None: service.summarize(
            c, target_tokens, focus_topic=focus_topic, previous=previous
        ),
    )
    history = _history_of(112_000, counter)
    engine = LegacyEngine(context=context)
    engine.update_model("gpt-4", 32768)
    compress_s, summarize_s, summarize_cpu = [], [], []
    result = None
    for _ in range(repeats):
        started = time.perf_counter()
        result = engine.clone_for_agent().compress(history)
        compress_s.append(time.perf_counter() - started)
    middle = history[4:-12]
    middle_tokens = counter.count_messages(middle)
    for _ in range(repeats):
        started, cpu = time.perf_counter(), time.process_time()
        summary = service.summarize(middle, 3686)
        summarize_s.append(time.perf_counter() - started)
        summarize_cpu.append(time.process_time() - cpu)
    return {
        "history_tokens": result.tokens_before,
        "after_tokens": result.tokens_after,
        "compress_median_s": round(statistics.median(compress_s), 3),
        "middle_tokens": middle_tokens,
        "summarize_median_s": round(statistics.median(summarize_s), 3),
        # CPU seconds: what the machine's load does not inflate (2 cores shared by many)
        "summarize_cpu_median_s": round(statistics.median(summarize_cpu), 3),
        "summary_tokens": summary.output_tokens,
        "summary_level": summary.level,
    }


def _replay(path: Path) -> dict:
    proc = subprocess.run(
        [*CTXENGINE, "replay", str(path), "--engine", "legacy", "--context-length", "32768",
         "--json"],
        capture_output=True, text=True, check=True, cwd=ROOT,
    )  # fmt: skip
    report = json.loads(proc.stdout)
    summary = report["summary"]
    levels = Counter(level for row in report["turns"] for level in row["summary_levels"])
    max_ms = max((row["compress_ms"] for row in report["turns"]), default=0.0)
    return {
        "session": path.name,
        "turns": summary["turns"],
        "probes_in_context": summary["probes_in_context"],
        "probes_total": summary["probes_total"],
        "probe_share": round(summary["probes_in_context"] / max(1, summary["probes_total"]), 3),
        "turns_over_budget": summary["turns_over_budget"],
        "max_request_tokens": summary["max_request_tokens"],
        "budget_tokens": summary["budget_tokens"],
        "compactions": summary["compactions"],
        "compaction_failures": summary["compaction_failures"],
        "levels": {f"level_{k}": levels.get(k, 0) for k in (0, 1, 2)},
        "max_compress_ms": round(max_ms, 1),
        "engine_s": round(summary["engine_ms_total"] / 1000, 1),
        "wall_s": summary["wall_seconds"],
    }


def bench_quality(seeds: list[int], include_sample: bool) -> list[dict]:
    rows = []
    if include_sample:
        rows.append(_replay(SAMPLE))
    with tempfile.TemporaryDirectory() as tmp:
        for seed in seeds:
            path = Path(tmp) / f"seed-{seed}.jsonl.gz"
            subprocess.run(
                [*CTXENGINE, "generate-session", "--turns", "2000", "--seed", str(seed), str(path)],
                capture_output=True, check=True, cwd=ROOT,
            )  # fmt: skip
            rows.append(_replay(path))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--speed", action="store_true", help="only (a)")
    parser.add_argument("--quality", action="store_true", help="only (b)")
    parser.add_argument("--seeds", type=int, nargs="*", default=[11, 22, 33])
    parser.add_argument("--no-sample", action="store_true", help="skip the committed sample")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    both = not (args.speed or args.quality)
    out: dict = {}
    if args.speed or both:
        out["speed"] = bench_speed(args.repeats)
    if args.quality or both:
        out["quality"] = bench_quality(args.seeds, not args.no_sample)
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    if "speed" in out:
        s = out["speed"]
        print(
            f"(a) compress {s['history_tokens']:,} -> {s['after_tokens']:,} tokens in "
            f"{s['compress_median_s']} s (median); summarizer alone on a "
            f"{s['middle_tokens']:,}-token middle: {s['summarize_median_s']} s "
            f"({s['summarize_cpu_median_s']} s CPU) -> {s['summary_tokens']} tokens "
            f"(level {s['summary_level']})"
        )
    for row in out.get("quality", []):
        print(
            f"(b) {row['session']}: probes {row['probes_in_context']}/{row['probes_total']} "
            f"({row['probe_share']:.0%}), over budget {row['turns_over_budget']}, max request "
            f"{row['max_request_tokens']:,}/{row['budget_tokens']:,}, compactions "
            f"{row['compactions']} (failed {row['compaction_failures']}), levels {row['levels']}, "
            f"max compress {row['max_compress_ms']} ms, engine {row['engine_s']} s"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
