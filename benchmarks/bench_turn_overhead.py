"""Host overhead per turn at 100 vs 10,000 live messages (issue 3's performance target).

A turn here is what an agent loop does without the provider call: add the user
message, build the request, record the assistant message with usage, finish the
turn. Two engines, each never compacting, so what is measured is the host: store
commits, request assembly, engine calls on the worker pool.

* ``required-only``: implements only the required methods.
* ``owns-compaction``: owns compaction (like LCM, the host's live view never
  shrinks) and implements ``select_context``, returning the system prompt and the
  newest few messages; the per-request inputs it gets must not cost O(history).

The token counting of the two new messages is measured on its own and subtracted
(target: "excluding the token counting of new text").

    .venv/bin/python benchmarks/bench_turn_overhead.py [--turns 300] [--json]

Target: overhead at 10,000 ≤ 1.5 x overhead at 100, and < 2 ms per turn.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from ctxengine_host.config import LoadedConfig
from ctxengine_host.contract.engine import ContextEngine
from ctxengine_host.runtime.host import ContextHost
from ctxengine_host.tokens import TokenCounter


class NeverCompacts(ContextEngine):
    """Only the required methods; never compacts."""

    name = "bench-never-compacts"

    def update_from_response(self, usage):
        self.last_prompt_tokens = usage["prompt_tokens"]

    def should_compress(self, prompt_tokens=None):
        return False

    def compress(self, messages, current_tokens=None, focus_topic=None):
        return messages


class OwnsCompactionSelects(NeverCompacts):
    """Owns compaction and selects a small context from the newest messages."""

    name = "bench-owns-compaction"
    owns_compaction = True

    def select_context(
        self,
        request_messages,
        *,
        conversation_messages=None,
        incoming_message=None,
        budget_tokens=0,
        runtime_settings=None,
    ):
        return [request_messages[0], *conversation_messages[-5:]]


ENGINES = {"required-only": NeverCompacts, "owns-compaction": OwnsCompactionSelects}


def history(n: int) -> list[dict]:
    out = []
    for i in range(n // 2):
        out.append({"role": "user", "content": f"question {i} about module_{i % 97}.py"})
        out.append({"role": "assistant", "content": f"answer {i}: see line {i * 7}"})
    return out


class Bench:
    """One host and session holding ``live`` messages, timed turn by turn."""

    def __init__(self, live: int, workdir: Path, engine: type[ContextEngine]) -> None:
        self.live = live
        self.host = ContextHost(
            engine(),
            model="gpt-4",
            context_length=50_000_000,
            config=LoadedConfig(),
            store_path=workdir / f"bench-{engine.name}-{live}.db",
            observers=[],
        )
        self.session = self.host.open_session(f"bench-{live}", system_prompt="You are a benchmark.")
        self.session.add_messages(history(live))
        self.counter = TokenCounter("gpt-4")
        self.samples: list[float] = []
        self.counting: list[float] = []

    def turn(self, i: int) -> None:
        user = {"role": "user", "content": f"next question {i}, about file_{i}.py"}
        reply = {"role": "assistant", "content": f"reply {i}: nothing to change"}
        started = time.perf_counter()
        self.counter.count_message(user)
        self.counter.count_message(reply)
        self.counting.append(time.perf_counter() - started)
        session = self.session
        started = time.perf_counter()
        session.add_messages([user])
        request = session.build_request()
        assert request.selected == isinstance(session.guard.engine, OwnsCompactionSelects)
        session.record_response(
            reply, {"prompt_tokens": request.estimated_tokens, "completion_tokens": 9}
        )
        session.finish_turn()
        self.samples.append(time.perf_counter() - started)

    def result(self, turns: int) -> dict[str, float]:
        assert len(self.session.messages()) == self.live + 2 * turns
        self.host.close()
        warm = self.samples[turns // 10 :]
        count_ms = statistics.median(self.counting) * 1000
        return {
            "live_messages": self.live,
            "turns": turns,
            "median_ms": statistics.median(warm) * 1000,
            "mean_ms": statistics.fmean(warm) * 1000,
            "p95_ms": sorted(warm)[int(len(warm) * 0.95)] * 1000,
            "new_text_counting_ms": count_ms,
            "overhead_ms": statistics.median(warm) * 1000 - count_ms,
        }


def measure(
    turns: int, workdir: Path, engine: type[ContextEngine]
) -> tuple[dict[str, float], dict[str, float]]:
    """Both sizes side by side: turns alternate, so machine noise hits both alike."""
    small, large = Bench(100, workdir, engine), Bench(10_000, workdir, engine)
    for i in range(turns):
        small.turn(i)
        large.turn(i)
    return small.result(turns), large.result(turns)


def compare(turns: int, workdir: Path, engine: type[ContextEngine]) -> dict[str, object]:
    small, large = measure(turns, workdir, engine)
    ratio = large["overhead_ms"] / small["overhead_ms"]
    ok = ratio <= 1.5 and large["overhead_ms"] < 2.0
    return {"small": small, "large": large, "ratio": ratio, "target_met": ok}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        os.environ.setdefault("CTXENGINE_DATA_DIR", tmp)
        os.environ.setdefault("CTXENGINE_QUARANTINE_FILE", str(Path(tmp) / "q.jsonl"))
        cases = {name: compare(args.turns, Path(tmp), cls) for name, cls in ENGINES.items()}
    ok = all(case["target_met"] for case in cases.values())
    if args.json:
        print(json.dumps({"cases": cases, "target_met": ok}, indent=2))
        return 0 if ok else 1
    for name, case in cases.items():
        print(f"{name}:")
        for row in (case["small"], case["large"]):
            print(
                f"  {row['live_messages']:>6} live: median {row['median_ms']:.3f} ms/turn, "
                f"p95 {row['p95_ms']:.3f} ms, new-text counting "
                f"{row['new_text_counting_ms']:.3f} ms, host overhead {row['overhead_ms']:.3f} ms"
            )
        print(
            f"  ratio 10,000/100: {case['ratio']:.2f} (target ≤ 1.5); overhead at 10,000: "
            f"{case['large']['overhead_ms']:.3f} ms (target < 2 ms): "
            f"{'met' if case['target_met'] else 'NOT met'}"
        )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
