"""Snippets of long ``lcm_grep`` hits: a few fragments around the query's rarest words.

The stores' own snippet functions (FTS5 ``snippet``, ``ts_headline``) show one window,
the one holding the most query terms. In a long message such as a task prompt the
terms that brought the hit up recur all over it ("files", "fix"), and the window they
pick is often not the part the question is about, so the answer is in no result the
agent sees. This module shows several short, non-overlapping fragments instead, each
placed where the terms that are rarest in the text (and not shown yet) occur, in
text order, together no longer than a whole short text.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter
from collections.abc import Sequence

from . import ranking

#: Fragments shown of one long text.
FRAGMENTS = 3
#: Occurrences of one term looked at in one text (a log repeating a word is bounded).
_MAX_OCCURRENCES = 200
#: Occurrences a fragment may be centred on (the first ones in the text).
_MAX_WINDOWS = 600
#: Characters of a text scanned for the terms: one oversized output stays cheap.
_MAX_SCAN_CHARS = 1_000_000
#: Each further occurrence of a term in one fragment adds this share of its weight (a
#: passage repeating a word is about it).
_REPEAT = 0.5
#: A term already shown counts this much in a later fragment.
_SHOWN_FACTOR = 0.25


def term_snippet(
    text: str,
    terms: Sequence[tuple[str, bool]],
    chars: int,
    alternatives: Sequence[tuple[str, bool]] = (),
) -> str | None:
    """Up to ``FRAGMENTS`` fragments of ``text``, together about ``chars`` characters,
    joined by "…"; ``None`` when no term ((text, is_prefix), as ``ranking.exact_pattern``
    matches it) occurs (the caller falls back on the store's
    snippet: a term matched only by its stem).

    A term's weight is the inverse of its occurrences in the text. Each fragment is
    placed around an occurrence of the rarest term it holds (one around a common word
    that merely reaches a rare one would push the rare one to its edge) and scores the
    weights of the terms it holds (a term an earlier fragment shows counts a quarter,
    each further occurrence adds half its weight again: a passage repeating a word is
    about it); the best fragment not overlapping one already chosen is taken next, the
    earlier one among equals. Fragments the words as written leave free go to their
    ``alternatives`` (other spellings and words, chosen the same way among themselves:
    they never displace a fragment of the words as written). Fewer fragments than
    ``FRAGMENTS`` share the characters the missing ones leave (a value a line after the
    only word found is shown, not cut at a third of the room)."""
    scanned = text[:_MAX_SCAN_CHARS]
    size = max(40, chars // FRAGMENTS)
    lowered = ranking.folded_aligned(scanned)
    chosen = _fragments(scanned, lowered, terms, size, [])
    if len(chosen) < FRAGMENTS and alternatives:
        chosen += _fragments(scanned, lowered, alternatives, size, chosen)
    if not chosen:
        return None
    width = max(size, chars // len(chosen))
    return _joined(text, _merged([_window(anchor, width, len(scanned)) for _, anchor in chosen]))


def _fragments(
    scanned: str,
    lowered: str | None,
    terms: Sequence[tuple[str, bool]],
    size: int,
    taken: Sequence[tuple[tuple[int, int], int]],
) -> list[tuple[tuple[int, int], int]]:
    """(window, anchor) of the fragments of ``terms`` chosen beside the ``taken`` ones,
    at most ``FRAGMENTS`` in all, best first."""
    found = [ranking.occurrences(scanned, term, _MAX_OCCURRENCES, lowered) for term in terms]
    weights = [1.0 / len(starts) if starts else 0.0 for starts in found]
    occurrences = sorted((start, term) for term, starts in enumerate(found) for start in starts)
    starts = [start for start, _ in occurrences]
    windows: dict[tuple[int, int], tuple[Counter[int], int]] = {}
    for start, anchor in occurrences[:_MAX_WINDOWS]:
        window = _window(start, size, len(scanned))
        if window in windows:  # neighbouring occurrences often share a window: settled
            continue
        inside = occurrences[bisect_left(starts, window[0]) : bisect_left(starts, window[1])]
        if weights[anchor] >= max(weights[term] for _, term in inside):
            windows[window] = (Counter(term for _, term in inside), start)  # around its rarest
    chosen: list[tuple[tuple[int, int], int]] = []
    shown: set[int] = set()
    while len(taken) + len(chosen) < FRAGMENTS:
        best: tuple[float, tuple[int, int]] | None = None
        for window, (held, _) in windows.items():  # in text order: equals keep the earlier
            if any(window[0] < end and start < window[1] for (start, end), _ in (*taken, *chosen)):
                continue
            score = sum(
                weights[t] * (_SHOWN_FACTOR if t in shown else 1.0) * (1 + _REPEAT * (n - 1))
                for t, n in held.items()
            )
            if best is None or score > best[0]:
                best = (score, window)
        if best is None:
            break
        chosen.append((best[1], windows[best[1]][1]))
        shown |= set(windows[best[1]][0])
    return chosen


def _merged(windows: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """``windows`` in text order, overlapping ones joined (widened ones may overlap)."""
    merged: list[tuple[int, int]] = []
    for start, end in sorted(windows):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def _window(start: int, size: int, length: int) -> tuple[int, int]:
    """``size`` characters around an occurrence at ``start``, inside the text."""
    left = max(0, min(start - size // 3, length - size))
    return left, min(length, left + size)


def _joined(text: str, windows: Sequence[tuple[int, int]]) -> str:
    parts = ["…" if windows[0][0] > 0 else ""]
    for n, (start, end) in enumerate(windows):
        parts.append(text[start:end])
        if end < len(text) and (n + 1 == len(windows) or windows[n + 1][0] > end):
            parts.append("…")
    return "".join(parts)
