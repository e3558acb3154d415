"""What hostile tool calls and inputs cost (issue #13): each figure is a call that used to
run past the hook timeout.

(a) ingest of one 20 MB tool output (sampled token counting, bounded indexing);
(b) ``lcm_grep`` of a 1,000-character query of five repeated words, ``scope=summaries``,
    on a 600-turn history (repeats searched once, within the time budget);
(c) ``lcm_grep`` of ``a{30000000}`` in regex mode (refused before compiling);
(d) counting the tokens of a 50 MB text.

    .venv/bin/python benchmarks/bench_hostile.py            # SQLite, about 20 s
    .venv/bin/python benchmarks/bench_hostile.py --turns 300
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
import uuid
from pathlib import Path

from ctxengine_host.config import SummarizerSection
from ctxengine_host.contract.context import EngineContext
from ctxengine_host.summarizer import SummarizerService
from ctxengine_host.tokens import TokenCounter
from ctxengine_lcm.engine import LcmEngine

COUNTER = TokenCounter("gpt-4")


def _engine(directory: Path, session: str) -> LcmEngine:
    service = SummarizerService(SummarizerSection(), COUNTER)
    context = EngineContext(
        engine_name="lcm", data_dir=directory, count_tokens=COUNTER.count_any,
        summarize=service.summarize,
    )  # fmt: skip
    engine = LcmEngine(
        config={"database": str(directory / "lcm.db"), "leaf_chunk_tokens": 1_500,
                "fresh_tail_messages": 8, "leaf_target_tokens": 120,
                "condensed_target_tokens": 150},
        context=context,
    )  # fmt: skip
    engine.update_model("gpt-4", 8_000)
    engine.on_session_start(session)
    return engine


def _uid() -> str:
    return uuid.uuid4().hex


def _turn(n: int) -> list[dict]:
    filler = " ".join(f"w{n}x{i}" for i in range(60))
    return [
        {
            "role": "user",
            "content": f"question {n} about topic{n}: {filler}",
            "message_uid": _uid(),
        },
        {"role": "assistant", "content": f"answer {n}: fact{n} is value{n}", "message_uid": _uid()},
    ]


def _timed(fn) -> tuple[float, object]:
    started = time.perf_counter()
    value = fn()
    return time.perf_counter() - started, value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=600)
    args = parser.parse_args()
    figures: dict[str, object] = {}
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        big = "".join(f"row {n}: status=ok path=/srv/app/m{n}.py\n" for n in range(700_000))
        big = big[:20_000_000]
        engine = _engine(directory, "big")
        batch = [
            {"role": "user", "content": "dump", "message_uid": _uid()},
            {"role": "assistant", "content": None, "message_uid": _uid(), "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "d", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": big, "message_uid": _uid()},
        ]  # fmt: skip
        figures["ingest_20mb_s"] = round(_timed(lambda: engine.ingest("big", batch))[0], 2)
        engine.dispose()

        engine = _engine(directory, "long")
        history: list[dict] = []
        for n in range(args.turns):
            history += _turn(n)
            engine.ingest("long", history[-2:])
            result = engine.select_context(history, budget_tokens=6_000)
            if engine.should_compress(result.estimated_tokens):
                engine.compress(history)
        query = ("fact question topic answer file " * 40)[:1000]
        grep = {"pattern": query, "scope": "summaries", "limit": 100}
        seconds, out = _timed(lambda: json.loads(engine.handle_tool_call("lcm_grep", grep)))
        figures["grep_repeated_words_s"] = round(seconds, 2)
        figures["grep_repeated_words_hits"] = out.get("count")
        bomb = {"pattern": "a{30000000}", "mode": "regex"}
        seconds, out = _timed(lambda: json.loads(engine.handle_tool_call("lcm_grep", bomb)))
        figures["regex_bomb_s"] = round(seconds, 3)
        figures["regex_bomb_answer"] = out.get("error", "")[:60]
        engine.dispose()
    text = "".join(
        f"line {n}: value={n * 7919 % 100003} path=/srv/x{n}.py\n" for n in range(1_200_000)
    )
    figures["count_50mb_s"] = round(_timed(lambda: COUNTER.count_text(text[:50_000_000]))[0], 2)
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
