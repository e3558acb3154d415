"""LCM at scale: cost of assembly, compaction and search at N stored messages vs 1,000.

Opt-in (not a test). Builds two stores side by side with the same generator and the same
summarizer, one with 1,000 messages and one with N (~600 characters each), then measures:

- ``select_context`` after a new message (p50), and one forced compaction sweep (p50):
  each should be at most 2x its time at 1,000;
- full-text ``lcm_grep`` for a rare term, limit 50 (p50 < 50 ms);
- relevance-sorted ``lcm_grep`` on a common term, limit 50 (p95 < 500 ms);
- keyword ``lcm_grep`` (``<word> service key``, limit 10, the 50 facts of ``bench_peer``
  planted over the history): p50 <= 2 ms and p95 <= 10 ms (at 1,000,000: p95 <= 50 ms), and
  recall (the planted value among the results) equal to recall at 1,000. Here every word
  of the query is common (``service`` and ``key`` are filler words too), a harder query
  than ``bench_peer.py``'s, where they occur in the facts alone; the bounds are the issue's
  for that one, kept here as a stricter check;
- batched ingest throughput while building (>= 20,000 messages/s; >= 10,000 from 1,000,000);
- engine memory during the measurements (tracemalloc peak), which should not grow with N.

    .venv/bin/python benchmarks/bench_lcm_scale.py --messages 100000
    .venv/bin/python benchmarks/bench_lcm_scale.py --messages 1000000 --json

The summarizer is a fast deterministic one (``--summarizer extractive`` uses the host's
extractive service instead; building 1M messages with it takes a long time): compaction
figures compare the engine's own work at both sizes with the same summarizer.
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import sqlite3
import statistics
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench_peer import FACTS, RARE_WORDS, fact_keywords  # the same planted facts and words

from ctxengine_host.config import SummarizerSection
from ctxengine_host.contract.context import EngineContext
from ctxengine_host.contract.messages import content_text
from ctxengine_host.contract.models import SummaryResult
from ctxengine_host.summarizer import SummarizerService
from ctxengine_host.tokens import TokenCounter
from ctxengine_lcm.engine import LcmEngine

BASELINE = 1_000
BATCH = 1_000
CONTEXT_LENGTH = 32_768
BUDGET = 27_000
COMMON_TERM = "deployment"
RARE_EVERY = 50_000
SAMPLES = 60

_BASE = (  # noqa: SIM905
    "the a to of and in is it for on that with this as be are was by at from or not we you "
    "can will should but have has if when then file test build error value config server "
    "client request response cache queue worker job task session user token message line "
    "function class module import return call path data table index query result list map "
    "key field type string number option flag setting default timeout retry limit batch "
    "stream buffer event handler log debug info warning deploy release branch commit merge "
    "review patch fix bug issue change update check run start stop open close read write "
    "parse load save send fetch store sync async lock thread process memory disk network "
    "port host service endpoint route api schema migration version package install script "
    "shell command output input status code exit signal "
).split()
#: ~6,000 words: the base words plus suffixed variants, so texts look like prose and code.
_WORDS = (
    _BASE
    + [f"{w}_{s}" for w in _BASE for s in ("id", "cfg", "v2", "tmp")]
    + [f"{w}{n}" for w in _BASE[:200] for n in range(20)]
)


def make_counter() -> Callable[[Any], int]:
    return TokenCounter("gpt-4").count_any


def fast_summarize(content: Any, target_tokens: int, focus_topic=None, previous=None):
    """First words of each source, cut near the target: cheap and deterministic."""
    lines = content.splitlines() if isinstance(content, str) else [content_text(m) for m in content]
    words = " ".join(" ".join(ln.split()[:6]) for ln in lines if ln.strip()).split()
    return SummaryResult(text=" ".join(words[: max(8, target_tokens // 2)]), level=0)


def make_engine(data_dir: Path, summarizer: str) -> LcmEngine:
    count = make_counter()
    if summarizer == "extractive":
        service = SummarizerService(SummarizerSection(), TokenCounter("gpt-4"))

        def summarize(content, target_tokens, focus_topic=None, previous=None):
            return service.summarize(content, target_tokens, focus_topic=focus_topic)
    else:
        summarize = fast_summarize
    context = EngineContext(
        engine_name="lcm", data_dir=data_dir, count_tokens=count, summarize=summarize
    )
    engine = LcmEngine(context=context)
    engine.update_model("gpt-4", CONTEXT_LENGTH)
    engine.on_session_start("bench")
    return engine


class Generator:
    """Turns of four messages (user, tool call, tool result, answer), ~600 characters each.

    With ``size``, the 50 facts of ``bench_peer`` are planted evenly over the first
    ``size`` messages (``PASS: the amber service key is K000Z; ...``), and every fact word
    recurs in one text in 25 everywhere, so a search that ranks only the newest matches of
    a word loses the old facts."""

    def __init__(self, seed: int = 7, size: int = 0) -> None:
        self.rng = random.Random(seed)
        self.n = 0
        # Three of a turn's four messages are texts: a fact every size / 50 messages.
        self.fact_every = 3 * size // (4 * FACTS) if size >= 4 * FACTS else 0
        self.texts = 0

    def text(self) -> str:
        words = self.rng.choices(_WORDS, k=150)
        if self.rng.random() < 0.3:
            words[self.rng.randrange(len(words))] = COMMON_TERM
        if self.rng.random() < 0.04:
            words[self.rng.randrange(len(words))] = self.rng.choice(RARE_WORDS)
        if self.n % RARE_EVERY == RARE_EVERY // 2:
            words[0] = f"zqxrare{self.n // RARE_EVERY}"
        planting = self.fact_every and self.texts // self.fact_every < FACTS
        if planting and self.texts % self.fact_every == self.fact_every // 2:
            word, value = fact_keywords(self.texts // self.fact_every)
            words[:8] = ["PASS:", "the", word, "service", "key", "is", f"{value};", "then"]
        self.texts += 1
        return " ".join(words)[:780]

    def messages(self, count: int) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        while len(out) < count:
            k = self.n
            call = f"call_{k}"
            turn = [
                {"role": "user", "content": self.text()},
                {"role": "assistant", "content": None, "tool_calls": [
                    {"id": call, "type": "function",
                     "function": {"name": "shell", "arguments": '{"cmd": "make test"}'}}]},
                {"role": "tool", "tool_call_id": call, "content": self.text()},
                {"role": "assistant", "content": self.text()},
            ]  # fmt: skip
            for m in turn:
                m["message_uid"] = f"{self.n:032x}"
                self.n += 1
            out += turn
        return out


def build(engine: LcmEngine, gen: Generator, total: int) -> dict[str, float]:
    """Ingest ``total`` messages in batches, compacting the way a runtime would."""
    ingest_s = compact_s = 0.0
    stored = 0
    while stored < total:
        batch = gen.messages(min(BATCH, total - stored))
        t0 = time.perf_counter()
        engine.ingest("bench", batch)
        t1 = time.perf_counter()
        while engine.should_compress_preflight([]):
            result = engine.compress([])
            if not result.compacted:
                break
        compact_s += time.perf_counter() - t1
        ingest_s += t1 - t0
        stored += len(batch)
    return {"ingest_msgs_per_s": total / ingest_s, "build_compact_s": compact_s}


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


class Timer:
    """Wall and CPU (this thread) milliseconds of the operations timed with it, by name."""

    def __init__(self) -> None:
        self.wall: dict[str, list[float]] = {}
        self.cpu: dict[str, list[float]] = {}

    def time(self, name: str, op: Callable[[], Any]) -> Any:
        w0, c0 = time.perf_counter(), time.thread_time()
        result = op()
        self.cpu.setdefault(name, []).append((time.thread_time() - c0) * 1000)
        self.wall.setdefault(name, []).append((time.perf_counter() - w0) * 1000)
        return result


HEAD = [{"role": "system", "content": "You are a coding agent."}]


def grep(engine: LcmEngine, args: dict[str, Any]) -> dict[str, Any]:
    return json.loads(engine.handle_tool_call("lcm_grep", args))


def measure_side_by_side(runs: list[tuple[LcmEngine, Generator, Timer]]) -> None:
    """The same operations on every store in turn, so machine load hits them alike."""
    for engine, _, _ in runs:
        engine.select_context(HEAD, budget_tokens=BUDGET)
    for i in range(SAMPLES):
        for engine, gen, timer in runs:
            engine.ingest("bench", gen.messages(4))
            timer.time("select", lambda e=engine: e.select_context(HEAD, budget_tokens=BUDGET))
            if i % 3 == 0:
                engine.ingest("bench", gen.messages(200))
                timer.time("compact", lambda e=engine: e.compress([], force=True))
            rare = {"pattern": f"zqxrare{i % 2}", "limit": 50, "scope": "messages"}
            timer.time("grep_rare", lambda e=engine, a=rare: grep(e, a))
            common = {"pattern": COMMON_TERM, "limit": 50, "sort": "relevance"}
            out = timer.time("grep_common", lambda e=engine, a=common: grep(e, a))
            assert out["count"] >= 40, out
            word, _ = fact_keywords(i % FACTS)
            keyword = {"pattern": f"{word} service key", "limit": 10}
            timer.time("grep_keyword", lambda e=engine, a=keyword: grep(e, a))


def keyword_recall(engine: LcmEngine) -> int:
    """Planted facts whose value is in the first 10 results of ``<word> service key``."""
    found = 0
    for index in range(FACTS):
        word, value = fact_keywords(index)
        found += value in json.dumps(grep(engine, {"pattern": f"{word} service key", "limit": 10}))
    return found


def memory_peaks_mib(engine: LcmEngine, gen: Generator) -> tuple[float, float]:
    """tracemalloc peaks (tracing slows everything down, so apart from the timings): the
    per-turn operations, and a regex scan (bounded by ``grep_max_rows_scanned``, so it
    stops growing once the history is larger than that cap)."""
    gc.collect()
    tracemalloc.start()
    for _ in range(5):
        engine.ingest("bench", gen.messages(200))
        engine.compress([], force=True)
        engine.select_context(HEAD, budget_tokens=BUDGET)
        grep(engine, {"pattern": COMMON_TERM, "sort": "relevance"})
        grep(engine, {"pattern": "zqxrare0", "limit": 50})
    _, turn_peak = tracemalloc.get_traced_memory()
    tracemalloc.reset_peak()
    grep(engine, {"pattern": "zqx[0-9]+nothing", "mode": "regex"})
    _, scan_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return turn_peak / 2**20, scan_peak / 2**20


def build_store(size: int, directory: Path, summarizer: str) -> tuple[LcmEngine, Generator, dict]:
    engine = make_engine(directory, summarizer)
    engine.context.count_tokens("warm the tokenizer up")
    gen = Generator(size=size)
    started = time.perf_counter()
    figures: dict[str, Any] = {"messages": size, **build(engine, gen, size)}
    figures["build_s"] = time.perf_counter() - started
    return engine, gen, figures


def finish(engine: LcmEngine, gen: Generator, timer: Timer, figures: dict) -> dict:
    figures.update(
        select_p50_ms=statistics.median(timer.wall["select"]),
        select_cpu_p50_ms=statistics.median(timer.cpu["select"]),
        compact_p50_ms=statistics.median(timer.wall["compact"]),
        compact_cpu_p50_ms=statistics.median(timer.cpu["compact"]),
        grep_rare_p50_ms=statistics.median(timer.wall["grep_rare"]),
        grep_common_relevance_p95_ms=percentile(timer.wall["grep_common"], 0.95),
        grep_keyword_p50_ms=statistics.median(timer.wall["grep_keyword"]),
        grep_keyword_p95_ms=percentile(timer.wall["grep_keyword"], 0.95),
        keyword_recall=keyword_recall(engine),
    )
    figures["traced_peak_mib"], figures["regex_scan_peak_mib"] = memory_peaks_mib(engine, gen)
    status = engine.get_status()
    figures["store_mib"] = status["store_bytes"] / 2**20
    figures["context_items"] = status["context_items"]
    figures["summaries_by_depth"] = status["context_summaries_by_depth"]
    engine.dispose()
    figures["unlinked_messages"], figures["unlinked_summaries"] = unlinked(engine.database_path)
    return figures


def unlinked(path: Path) -> tuple[int, int]:
    """Messages and summaries neither in the active context nor under a summary (want 0, 0)."""
    conn = sqlite3.connect(path)
    try:
        (messages,) = conn.execute(
            "SELECT COUNT(*) FROM messages m WHERE NOT EXISTS (SELECT 1 FROM summary_messages s "
            "WHERE s.message_id = m.id) AND NOT EXISTS (SELECT 1 FROM context_items c WHERE "
            "c.conversation_id = m.conversation_id AND c.kind = 'message' AND c.ref_id = m.id)"
        ).fetchone()
        (summaries,) = conn.execute(
            "SELECT COUNT(*) FROM summaries u WHERE NOT EXISTS (SELECT 1 FROM summary_sources s "
            "WHERE s.source_id = u.id) AND NOT EXISTS (SELECT 1 FROM context_items c WHERE "
            "c.conversation_id = u.conversation_id AND c.kind = 'summary' AND c.ref_id = u.id)"
        ).fetchone()
        return messages, summaries
    finally:
        conn.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=100_000, help="N stored messages")
    parser.add_argument("--summarizer", choices=("fast", "extractive"), default="fast")
    parser.add_argument("--dir", help="keep the stores here (default: a temporary directory)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(args.dir or tmp)
        built = [
            build_store(BASELINE, root / "baseline", args.summarizer),
            build_store(args.messages, root / "large", args.summarizer),
        ]
        runs = [(engine, gen, Timer()) for engine, gen, _ in built]
        measure_side_by_side(runs)
        small, large = (
            finish(engine, gen, timer, figures)
            for (engine, gen, timer), (_, _, figures) in zip(runs, built, strict=True)
        )
    ratios = {
        "select_cpu_ratio": large["select_cpu_p50_ms"] / small["select_cpu_p50_ms"],
        "compact_cpu_ratio": large["compact_cpu_p50_ms"] / small["compact_cpu_p50_ms"],
        "select_wall_ratio": large["select_p50_ms"] / small["select_p50_ms"],
        "compact_wall_ratio": large["compact_p50_ms"] / small["compact_p50_ms"],
        "memory_ratio": large["traced_peak_mib"] / small["traced_peak_mib"],
    }
    # The targets (docs/performance.md): at 1,000,000 messages keyword p95 only, and the
    # ingest rate of the 1,000,000 row (10,000/s); up to 100,000 the peer rows' figures.
    huge = args.messages >= 1_000_000
    ingest_bound = 10_000 if huge else 20_000
    checks = {
        "select <= 2x (cpu p50)": ratios["select_cpu_ratio"] <= 2,
        "compaction <= 2x (cpu p50)": ratios["compact_cpu_ratio"] <= 2,
        "rare grep p50 < 50 ms": large["grep_rare_p50_ms"] < 50,
        "relevance grep p95 < 500 ms": large["grep_common_relevance_p95_ms"] < 500,
        **(
            {"keyword grep p95 <= 50 ms (every word common)": large["grep_keyword_p95_ms"] <= 50}
            if huge
            else {
                "keyword grep p50 <= 2 ms (every word common)": large["grep_keyword_p50_ms"] <= 2,
                "keyword grep p95 <= 10 ms (every word common)": large["grep_keyword_p95_ms"] <= 10,
            }
        ),
        "keyword recall as at 1,000": large["keyword_recall"] >= small["keyword_recall"],
        f"ingest >= {ingest_bound // 1000}k msg/s": large["ingest_msgs_per_s"] >= ingest_bound,
        "memory independent of history (<= 1.5x)": ratios["memory_ratio"] <= 1.5,
        "every message and summary linked": large["unlinked_messages"] == 0
        and large["unlinked_summaries"] == 0,
    }
    report = {"baseline": small, "large": large, "ratios": ratios, "checks": checks}
    if args.json:
        print(json.dumps(report, indent=2))
        return
    keys = [k for k in large if not isinstance(large[k], dict)]
    print(f"{'figure':32} {BASELINE:>12,} {args.messages:>12,}")
    for key in keys:
        a, b = small[key], large[key]
        fmt = "{:>12,.2f}" if isinstance(b, float) else "{:>12,}"
        print(f"{key:32} {fmt.format(a)} {fmt.format(b)}")
    for key, value in ratios.items():
        print(f"{key:32} {value:>25.2f}")
    for name, ok in checks.items():
        print(f"{'PASS' if ok else 'FAIL'}  {name}")


if __name__ == "__main__":
    main()
