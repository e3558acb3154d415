"""CPU of the extractive summarizer on inputs captured from real replays, and a digest of
what it wrote.

``capture`` runs a ``ctxengine`` command in this process with
``ExtractiveBackend.summarize`` wrapped, and pickles every call it made (content, target,
focus, previous summary, level), the tokenizer it counted with and what it returned.
``time`` makes the same calls again, in order, for a few rounds (caches cleared before
each, as in a fresh replay) and prints the thread CPU per call and in all, per level, and
the sha256 of the outputs: an optimisation must leave the digest unchanged. Point
``PYTHONPATH`` at another checkout's ``src`` to time that code on the same capture.

    PYTHONPATH=src .venv/bin/python benchmarks/bench_summarizer.py capture /tmp/sum-long.pkl \
        replay examples/sessions/long-2000.jsonl.gz --engine lcm --context-length 32768
    PYTHONPATH=src .venv/bin/python benchmarks/bench_summarizer.py time /tmp/sum-long.pkl
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import os
import pickle
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from bench_replay import isolated_home

from ctxengine_host.summarizer import extractive, features, files, render, structure
from ctxengine_host.tokens import TokenCounter

_MODULES = (extractive, features, files, render, structure)


def capture(out: Path, command: list[str]) -> None:
    """Run ``command`` (a ``ctxengine`` argv) and pickle the summarizer calls it made."""
    from ctxengine_host.cli import main

    calls: list[dict[str, Any]] = []
    counter: dict[str, str] = {}
    original = extractive.ExtractiveBackend.summarize

    def recording(self: Any, content: Any, target_tokens: int, *args: Any, **kw: Any) -> str:
        arguments = copy.deepcopy((content, target_tokens, *args))
        options = copy.deepcopy(kw)
        result = original(self, content, target_tokens, *args, **kw)
        owner = getattr(self._count_text, "__self__", None)
        if isinstance(owner, TokenCounter):
            counter.update(model=owner.model, encoding=owner.encoding_name)
        calls.append({"args": arguments, "kwargs": options, "result": result})
        return result

    extractive.ExtractiveBackend.summarize = recording  # type: ignore[method-assign]
    with tempfile.TemporaryDirectory(prefix="bench-summarizer-") as home:
        os.environ.update(isolated_home(home))
        code = main(command)
    extractive.ExtractiveBackend.summarize = original  # type: ignore[method-assign]
    out.write_bytes(pickle.dumps({"command": command, "counter": counter, "calls": calls}))
    print(f"exit {code}: {len(calls)} calls captured in {out}", file=sys.stderr)


def _level(call: dict[str, Any]) -> int:
    args, kwargs = call["args"], call["kwargs"]
    return int(kwargs.get("level", args[4] if len(args) > 4 else 0))


def _clear_caches() -> None:
    """Empty the summarizer's memoized functions, so each round starts like a replay."""
    for module in _MODULES:
        for value in vars(module).values():
            if callable(getattr(value, "cache_clear", None)):
                value.cache_clear()


def run_round(captured: dict[str, Any]) -> tuple[list[float], list[str]]:
    """Every captured call once, in order: thread CPU seconds and output of each."""
    _clear_caches()
    counter = TokenCounter(**captured["counter"]) if captured["counter"] else TokenCounter()
    backend = extractive.ExtractiveBackend(counter.count_text)
    cpu: list[float] = []
    outputs: list[str] = []
    for call in captured["calls"]:
        started = time.thread_time()
        outputs.append(backend.summarize(*call["args"], **call["kwargs"]))
        cpu.append(time.thread_time() - started)
    return cpu, outputs


def digest(outputs: list[str]) -> str:
    hasher = hashlib.sha256()
    for text in outputs:
        hasher.update(text.encode())
        hasher.update(b"\0")
    return hasher.hexdigest()


def time_capture(path: Path, rounds: int) -> None:
    captured = pickle.loads(path.read_bytes())
    calls = captured["calls"]
    totals: list[float] = []
    per_call: list[list[float]] = []
    digests = set()
    for _ in range(rounds):
        cpu, outputs = run_round(captured)
        totals.append(sum(cpu))
        per_call.append(cpu)
        digests.add(digest(outputs))
    best = min(range(rounds), key=totals.__getitem__)
    by_level: dict[int, list[float]] = defaultdict(list)
    for call, seconds in zip(calls, per_call[best], strict=True):
        by_level[_level(call)].append(seconds)
    expected = digest([call["result"] for call in calls])
    print(f"{path.name}: {len(calls)} calls, {rounds} rounds ({' '.join(captured['command'])})")
    print(f"  total CPU s: min {min(totals):.3f}, median {statistics.median(totals):.3f}")
    for level, seconds in sorted(by_level.items()):
        print(
            f"  level {level}: {len(seconds)} calls, {1000 * sum(seconds) / len(seconds):.2f} ms"
            f" per call (p50 {1000 * statistics.median(seconds):.2f},"
            f" max {1000 * max(seconds):.2f}), {sum(seconds):.3f} s in all"
        )
    (found,) = digests if len(digests) == 1 else (f"differs between rounds: {sorted(digests)}",)
    print(f"  sha256 {found} ({'same as' if found == expected else 'NOT the'} captured output)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="mode", required=True)
    cap = sub.add_parser("capture", help="run a ctxengine command and pickle its calls")
    cap.add_argument("out", type=Path)
    cap.add_argument("command", nargs=argparse.REMAINDER, help="the ctxengine argv")
    timing = sub.add_parser("time", help="time the captured calls")
    timing.add_argument("captures", type=Path, nargs="+")
    timing.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if args.mode == "capture":
        capture(args.out, args.command)
    else:
        for path in args.captures:
            time_capture(path, args.rounds)


if __name__ == "__main__":
    main()
