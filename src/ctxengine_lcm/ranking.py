"""Relevance ranking for ``lcm_grep``: exact words first, near-duplicates folded together.

The store ranks full-text matches by bm25 (``ts_rank`` on PostgreSQL) over stemmed
terms, so "scheduler" also matches every "schedule" and "scheduled", and an agent's
history repeats the same templated lines ("Next, look at src/app/storage/x.py ...")
dozens of times. Both push the message the caller is after out of the first page.
This module reranks a larger pool of the store's best matches:

- a candidate holding a query term exactly as written (a whole word, any case) gains
  that term's weight, which is higher the fewer candidates hold it exactly;
- a candidate whose words mostly repeat a better-ranked one's (Jaccard similarity of
  word sets at or above a threshold) is folded under it, listed by id, so each result
  slot shows a distinct text.

Scores are normalized within the pool, so the same rules hold whatever scale the
backend's ranking function uses.
"""

from __future__ import annotations

import bisect
import functools
import math
import re
from collections.abc import Sequence
from itertools import islice
from typing import NamedTuple

from .store import SearchHit

_WORDS = re.compile(r"\w+")
#: Non-ASCII letters that case-insensitive matching equates with ASCII ones but whose
#: lowercase form is not ASCII (dotless i, long s).
_ASCII_FOLDS = (("\u0131", "i"), ("\u017f", "s"))
#: A byte table mapping each ASCII character outside ``\w`` to a space.
_ASCII_NON_WORD = bytes(c if chr(c).isalnum() or c == ord("_") else 32 for c in range(256))


class RankedHit(NamedTuple):
    """A hit with its combined relevance (higher is better) and the hits folded under it
    (a named tuple: a pool builds one per candidate, several times cheaper than a frozen
    dataclass)."""

    hit: SearchHit
    relevance: float
    similar: tuple[SearchHit, ...] = ()


def query_terms(operands: Sequence[str]) -> list[tuple[str, bool]]:
    """(text, is_prefix) of each operand of a built full-text query (``"word"``,
    ``"two words"`` or ``"pre" *``), lowercased, duplicates dropped."""
    terms: list[tuple[str, bool]] = []
    for operand in operands:
        prefix = operand.endswith(" *")
        text = operand.removesuffix(" *")[1:-1].replace('""', '"').lower()
        if text.strip() and (text, prefix) not in terms:
            terms.append((text, prefix))
    return terms


def rerank(
    hits: Sequence[SearchHit],
    terms: Sequence[tuple[str, bool]],
    alternatives: Sequence[Sequence[tuple[str, float]]] = (),
    texts: Sequence[str] | None = None,
) -> list[RankedHit]:
    """``hits`` (the store's best matches, any order) best first by normalized store score
    plus the weights of the query terms each holds exactly.

    ``alternatives`` (parallel to ``terms``: other words for each, with a factor below 1)
    stand in for a term a hit does not hold: it gains the best alternative's weight
    times its factor, never more than one per term and never more than the term's own
    weight, so alternatives add candidates without outweighing the terms as written
    (a synonym of a common word counts as little as that word).

    ``texts`` (parallel to ``hits``; default: their own) are where the terms are looked
    for: a caller may read a long text further than the preview a hit shows."""
    if not hits:
        return []
    alts = [list(alternatives[i]) if i < len(alternatives) else [] for i in range(len(terms))]
    joined = _TextsJoined([h.text for h in hits] if texts is None else texts)
    holds = joined.holdings(terms)
    # Alternatives stand in only for a term a hit lacks: those of a term every hit holds
    # are not looked for (in a pool found by its rare words, most terms are such).
    wanted = [i for i in range(len(terms)) if alts[i] and not all(row[i] for row in holds)]
    others = [(text, False) for i in wanted for text, _ in alts[i]]
    if others:
        for row, extra in zip(holds, joined.holdings(others), strict=True):
            row.extend(extra)
    weights = [
        math.log((len(hits) + 1) / (sum(column) + 0.5)) for column in zip(*holds, strict=True)
    ]
    total_weight = sum(weights[: len(terms)]) or 1.0
    # Each term's alternatives as (column in ``holds``, the weight one stands in with),
    # best first: a hit that lacks the term gains the first of them it holds.
    stand_ins: list[list[tuple[int, float]]] = [[] for _ in terms]
    column = len(terms)
    for i in wanted:
        values = [
            (column + n, min(weights[column + n], weights[i]) * factor)
            for n, (_, factor) in enumerate(alts[i])
        ]
        stand_ins[i] = sorted(values, key=lambda pair: -pair[1])
        column += len(alts[i])
    term_weights = list(enumerate(weights[: len(terms)]))
    scores = [_store_relevance(h) for h in hits]
    top = max(scores) or 1.0
    ranked: list[RankedHit] = []
    for hit, score, row in zip(hits, scores, holds, strict=True):
        exact = 0.0
        for i, weight in term_weights:
            if row[i]:
                exact += weight
                continue
            for c, value in stand_ins[i]:
                if row[c]:
                    exact += value
                    break
        ranked.append(RankedHit(hit, score / top + exact / total_weight))
    ranked.sort(key=lambda r: (-r.relevance, -r.hit.created_at, -r.hit.id))
    return ranked


def fold_similar(ranked: Sequence[RankedHit], threshold: float, groups: int) -> list[RankedHit]:
    """At most ``groups`` results in order, each carrying the lower-ranked hits whose word
    sets overlap its own by ``threshold`` (Jaccard) or more; a threshold above 1 folds
    nothing. The scan stops at the first hit that would start one group too many, so the
    folded hits are those ranked above it.

    Each hit is compared with the leaders (at most ``groups``) directly: with so few
    pairs, an index of shared words (prefix filtering) cost more than the comparisons it
    saved. A leader whose size differs from the hit's by more than the threshold allows
    (Jaccard is at most the smaller size over the larger) is passed over uncompared."""
    leaders: list[tuple[RankedHit, frozenset[str], list[SearchHit]]] = []
    for candidate in ranked:
        words = _word_set(candidate.hit.text)
        home = next(
            (
                folded
                for _, other, folded in leaders
                if words
                and min(len(words), len(other)) / max(len(words), len(other)) >= threshold
                and _jaccard(words, other) >= threshold
            ),
            None,
        )
        if home is not None:
            home.append(candidate.hit)
            continue
        if len(leaders) == groups:
            break
        leaders.append((candidate, words, []))
    return [RankedHit(r.hit, r.relevance, tuple(folded)) for r, _, folded in leaders]


def _word_set(text: str) -> frozenset[str]:
    """The ``\\w+`` words of ``text`` lowercased. An ASCII text (most) is split at its
    non-word characters made spaces: the same words, in under half the regex's time."""
    lowered = text.lower()
    if lowered.isascii():
        return frozenset(_non_words_spaced(lowered).split())
    return frozenset(_WORDS.findall(lowered))


def _non_words_spaced(ascii_text: str) -> str:
    """``ascii_text`` with every character outside ``\\w`` made a space (a byte table: C
    speed, where ``str.translate`` looks each character up in a dict)."""
    return ascii_text.encode().translate(_ASCII_NON_WORD).decode()


def _needle(term: str) -> str | None:
    """What a text must contain (lowercased) to hold ``term``: its first word, when ASCII."""
    first = term.split()[0] if term.split() else ""
    return first if first.isascii() else None


def folded_aligned(text: str) -> str | None:
    """``text`` lowercased for :func:`occurrences`, or None when lowercasing changes its
    length (positions in it would not be positions in ``text``)."""
    lowered = _folded(text)
    return lowered if len(lowered) == len(text) else None


def occurrences(
    text: str, term: tuple[str, bool], limit: int, lowered: str | None = None
) -> list[int]:
    """The first ``limit`` starts of ``term`` ((text, is_prefix), lowercased) in ``text``,
    where :func:`exact_pattern` matches.

    A regex that opens with a lookbehind and ignores case scans every position (3 ms for
    100,000 characters); with ``lowered`` (:func:`folded_aligned` of ``text``) the term's
    ASCII needle is found at C speed and the regex only confirms each place it occurs, as
    :meth:`_TextsJoined.holdings` does."""
    needle = _needle(term[0])
    if needle is None or lowered is None:
        return [match.start() for match in islice(exact_pattern(*term).finditer(text), limit)]
    starts: list[int] = []
    at = lowered.find(needle)
    while at >= 0 and len(starts) < limit:
        if exact_pattern(*term).match(text, at) is not None:
            starts.append(at)
        at = lowered.find(needle, at + 1)
    return starts


class _TextsJoined:
    """Texts prepared once for :meth:`holdings`, which ``rerank`` asks twice (the query's
    terms, then the alternatives of the terms some texts lack): the joins, lowercasings
    and byte translations are most of a pass's cost.

    The texts are joined and each term's needle looked for in the lowercased whole (C
    speed, :func:`_scan_joined`). The needles are ASCII: lowercasing (with the two letters
    the regex also folds to ASCII ones, dotless i and long s) then agrees with the regex's
    case folding, so no real match is missed. ASCII texts (most) are joined apart from the
    others: one non-ASCII character makes a joined string wide, and lowercasing and
    searching a wide string cost several times more. A text whose lowercase changes length
    (positions would not line up) is matched on its own, by the regexes alone."""

    def __init__(self, texts: Sequence[str]) -> None:
        self.texts = texts
        narrow: list[int] = []
        wide: list[int] = []
        wide_folded: list[str] = []
        #: The texts matched by the regexes alone.
        self.unaligned: list[int] = []
        for index, text in enumerate(texts):
            if text.isascii():
                narrow.append(index)
                continue
            folded = _folded(text)  # lowercasing a wide text is slow: its join reuses it
            if len(folded) == len(text):
                wide.append(index)
                wide_folded.append(folded)
            else:
                self.unaligned.append(index)
        self.joins = [_Join.of(texts, narrow)] if narrow else []
        if wide:
            self.joins.append(_Join.of(texts, wide, wide_folded))

    def holdings(self, terms: Sequence[tuple[str, bool]]) -> list[list[bool]]:
        """Which of ``terms`` ((text, is_prefix), lowercased) each text holds exactly, one
        row per text. A term's regex is compiled only where a match needs it (~40 µs
        each: most of a new query's plain words are found without one)."""
        held = [[False] * len(terms) for _ in self.texts]
        for index in self.unaligned:
            text = self.texts[index]
            held[index] = [exact_pattern(*term).search(text) is not None for term in terms]
        for join in self.joins:
            _scan_joined(self.texts, join, terms, held)
        return held


class _Join(NamedTuple):
    """Some texts joined by a newline (a non-word separator: no word spans two), with
    where each starts and ends in the join."""

    aligned: list[int]
    joined: str
    lowered: str
    #: ``lowered`` with every non-word character a space and a space at either end, when
    #: ASCII (else None).
    spaced: str | None
    starts: list[int]
    ends: list[int]

    @classmethod
    def of(cls, texts: Sequence[str], aligned: list[int], folded: list[str] | None = None) -> _Join:
        """The join of ``texts[i]`` for ``i`` in ``aligned``; ``folded``, when given, their
        :func:`_folded` forms in the same order. Those joined are the join folded: only
        the Greek capital sigma lowercases by its context, which ends at the newline."""
        joined = "\n".join(texts[i] for i in aligned)
        lowered = _folded(joined) if folded is None else "\n".join(folded)
        spaced = f" {_non_words_spaced(lowered)} " if lowered.isascii() else None
        starts: list[int] = []
        ends: list[int] = []
        offset = 0
        for index in aligned:
            starts.append(offset)
            offset += len(texts[index])
            ends.append(offset)
            offset += 1
        return cls(aligned, joined, lowered, spaced, starts, ends)


def _scan_joined(
    texts: Sequence[str],
    join: _Join,
    terms: Sequence[tuple[str, bool]],
    held: list[list[bool]],
) -> None:
    """Mark in ``held`` the terms the texts of ``join`` hold, found in their lowercased
    join. Where a term's needle occurs, a single word needs only a non-word character (or
    the edge) on both sides, what the regex's lookarounds test; other terms, the regex
    anchored there. A text found holding a term is skipped to the next.

    When the texts are ASCII, every non-word character of the join is made a space and a
    plain word (letters, digits, ``_``) is looked for with a space on each side: only its
    whole-word occurrences are found, none is checked in Python."""
    aligned, joined, lowered, spaced, starts, ends = join
    for column, (text, prefix) in enumerate(terms):
        needle = _needle(text)
        if needle is None:
            pattern = exact_pattern(text, prefix)
            for index in aligned:
                held[index][column] = pattern.search(texts[index]) is not None
            continue
        word = not prefix and needle == text
        if word and spaced is not None and _is_plain_word(needle):
            # At index ``at`` of ``spaced``: the space before the word, which starts at
            # ``at`` of ``joined`` (``spaced`` has one character more in front).
            key = f" {needle} "
            at = spaced.find(key)
            while at >= 0:
                slot = bisect.bisect_right(starts, at) - 1
                held[aligned[slot]][column] = True
                at = spaced.find(key, ends[slot] + 1)
            continue
        at = lowered.find(needle)
        after_needle = len(needle)
        while at >= 0:
            slot = bisect.bisect_right(starts, at) - 1
            after = at + after_needle
            if (
                (at == 0 or not _is_word(joined[at - 1]))
                and (after == len(joined) or not _is_word(joined[after]))
                if word
                else exact_pattern(text, prefix).match(joined, at, ends[slot]) is not None
            ):
                held[aligned[slot]][column] = True
                at = lowered.find(needle, ends[slot] + 1)
            else:
                at = lowered.find(needle, at + 1)


def _is_plain_word(needle: str) -> bool:
    """Whether ``needle`` is ASCII letters, digits and ``_`` only (one ``\\w+`` word)."""
    return needle.isascii() and needle.replace("_", "a").isalnum()


def _is_word(character: str) -> bool:
    """What the regex's word class matches: a letter or digit of any script, or ``_``."""
    return character.isalnum() or character == "_"


def _folded(text: str) -> str:
    """``text`` lowercased with the letters the regex folds to ASCII ones made ASCII."""
    lowered = text.lower()
    if not text.isascii():
        for letter, ascii_letter in _ASCII_FOLDS:  # str.replace: C speed, unlike translate
            lowered = lowered.replace(letter, ascii_letter)
    return lowered


@functools.lru_cache(maxsize=1024)
def exact_pattern(text: str, prefix: bool) -> re.Pattern[str]:
    """``text`` as whole words, any case and any separators between them (a prefix: the
    last word may go on)."""
    words = [re.escape(w) for w in text.split()]
    tail = r"\w*" if prefix else ""
    return re.compile(r"(?<!\w)" + r"\W+".join(words) + tail + r"(?!\w)", re.IGNORECASE)


def _store_relevance(hit: SearchHit) -> float:
    """The store's score as "higher is better" and never negative (stores report lower
    as better: negated bm25 or ts_rank)."""
    return max(0.0, -(hit.score or 0.0))


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    shared = len(a & b)
    return shared / (len(a) + len(b) - shared)
