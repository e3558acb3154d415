"""LCM's per-request assembly, for instruction counts: the first N messages of the 2,000-turn
sample through an ``LcmEngine`` the way the host drives it.

Each message is stored (``ingest``) in turn; before each assistant message the live history
is sent to ``select_context`` and a compaction runs when the engine asks for one. The
summarizer truncates (deterministic and cheap), counts are tiktoken's. Prints the requests
made, the sha256 of their results (timestamps masked: stored messages take the clock's time)
and the compactions: two versions of the code compare by their instruction counts when
the hashes are equal.

    valgrind --tool=callgrind --callgrind-out-file=/dev/null \\
        .venv/bin/python benchmarks/bench_lcm_select.py --messages 3000
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import re
import tempfile
from pathlib import Path
from typing import Any

from ctxengine_host.contract.context import EngineContext
from ctxengine_host.contract.models import SummaryResult
from ctxengine_host.tokens import TokenCounter
from ctxengine_lcm.engine import LcmEngine

SAMPLE = Path(__file__).resolve().parents[1] / "examples" / "sessions" / "long-2000.jsonl.gz"
CONTEXT_LENGTH = 32_768
#: The request budget: the window less room for the tool schemas and the reply.
BUDGET = 30_000
#: An ISO time stamp as summaries show it.
STAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")


def sample_messages(count: int) -> list[dict[str, Any]]:
    """The system prompt and the next ``count - 1`` messages of the sample, with uids."""
    with gzip.open(SAMPLE, "rt") as lines:
        next(lines)  # the session header
        messages = [json.loads(line) for _, line in zip(range(count), lines, strict=False)]
    return [messages[0], *({**m, "message_uid": f"u{n}"} for n, m in enumerate(messages[1:], 1))]


def make_engine(data_dir: Path) -> LcmEngine:
    counter = TokenCounter()

    def truncate(content: Any, target_tokens: int, **_: Any) -> SummaryResult:
        text = content if isinstance(content, str) else "\n".join(str(m) for m in content)
        cut = text[: max(1, target_tokens) * 4]
        return SummaryResult(text=cut, level=2, output_tokens=counter.count_text(cut))

    context = EngineContext(
        engine_name="lcm", data_dir=data_dir, count_tokens=counter.count_any, summarize=truncate
    )
    engine = LcmEngine(context=context)
    engine.update_model("gpt-4", CONTEXT_LENGTH)
    engine.on_session_start("s")
    return engine


def run(messages: list[dict[str, Any]]) -> tuple[int, str, int]:
    """(requests, sha256 of the results, compactions)."""
    digest = hashlib.sha256()
    requests = compactions = 0
    with tempfile.TemporaryDirectory() as directory:
        engine = make_engine(Path(directory))
        history = messages[:1]
        for message in messages[1:]:
            if message.get("role") == "assistant" and len(history) > 1:
                result = engine.select_context(history, budget_tokens=BUDGET)
                shown = [result.messages, result.estimated_tokens, result.covers]
                digest.update(STAMP.sub("T", json.dumps(shown, sort_keys=True)).encode())
                requests += 1
                if engine.should_compress_preflight(history):
                    engine.compress(history)
                    compactions += 1
            history.append(message)
            engine.ingest("s", [message])
        engine.dispose()
    return requests, digest.hexdigest(), compactions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=3_000)
    args = parser.parse_args()
    requests, digest, compactions = run(sample_messages(args.messages))
    print(f"requests {requests}  results sha256 {digest}  compactions {compactions}")


if __name__ == "__main__":
    main()
