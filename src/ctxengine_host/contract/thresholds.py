"""Resolution of per-model compaction thresholds (``[compression] model_thresholds``)."""

from __future__ import annotations

from collections.abc import Mapping


def resolve_model_threshold(
    model: str, thresholds: Mapping[str, float] | None, provider: str = ""
) -> float | None:
    """Return the threshold for ``model``, or None when no key matches.

    A key matches when it is a substring of the model name; the longest match
    wins. A ``provider:substring`` key matches only that provider and wins a tie
    against a plain key of the same length.
    """
    if not thresholds or not model:
        return None
    best: tuple[int, int, float] | None = None  # (length, provider-specific, value)
    for key, value in thresholds.items():
        key_provider, sep, pattern = key.partition(":")
        if sep:
            if not provider or key_provider != provider:
                continue
            rank = (len(pattern), 1, float(value))
        else:
            pattern = key
            rank = (len(pattern), 0, float(value))
        if pattern and pattern in model and (best is None or rank[:2] > best[:2]):
            best = rank
    return None if best is None else best[2]
