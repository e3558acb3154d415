"""Which query terms find ``lcm_grep``'s candidates: the rare ones.

Ranking every match of a common term costs time in proportion to the history (a word of
one in twenty messages matches 5,000 of 100,000), and ranking only the newest matches
loses old facts whose words recur later. A natural-language query mixes both kinds of
words, and the message it is after holds its rarest ones: those are the terms that
find the candidates. The terms are taken rarest first while all their matches fit the
rerank pool, so the pool holds every match of every term taken, however old; the common
terms left out still count in reranking (a candidate holding them ranks higher) but
find nothing of their own. Counting a term's matches stops past the pool's size, so a
common term costs as little to count as a rare one. When even the rarest term overflows the
pool, the same choice against the relevance window picks the terms whose matches the store
ranks (keeping its best): ranking a common term costs a pass over its every match. A term
in more than half of the texts is never taken: bm25 gives it no weight (FTS5 floors the
IDF of such a term near zero), so its matches would only add rows ranked last, at the
cost of that pass (in a coding agent's session "command" is in half the messages: 30 ms).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

#: The share of the rerank pools the rare terms' matches may fill. Each candidate costs
#: its reranking and folding in Python (~10 µs); where every word of a query is rare
#: enough to fit the whole pools (histories of a few thousand messages), the candidates
#: were every match of the common words too, and a query cost several times its figure
#: at 100,000 messages. The terms left out still count in reranking, and a page the rare
#: terms cannot fill is filled from the newest matches of the whole query.
SEED_SHARE = 0.25

#: A search target's name.
_Target = TypeVar("_Target", bound=str)


@dataclass(frozen=True)
class Seeds:
    """The operands that find the candidates, joined as an expression."""

    expression: str
    #: True when some operand with matches was left out (too common to fit the pool).
    skipped: bool
    #: False when the matches fit the relevance window but not the rerank pools: the store
    #: ranks them and keeps its best, with every match holding all the query's terms.
    whole: bool = True
    #: The operands taken, rarest first.
    operands: tuple[str, ...] = ()
    #: The targets holding their matches, where they were counted per target (None: not
    #: known, every target is searched).
    targets: tuple[str, ...] | None = None


def choose_seeds(
    operands: Sequence[str], counts: Sequence[int], pool: int, texts: int | None = None
) -> Seeds | None:
    """The rarest ``operands`` whose ``counts`` (matches, capped above ``pool``) add up to
    at most ``pool``, none of them in more than half of ``texts`` (when given: how many
    texts were searched); None when even the rarest matches more than the pool holds or
    no operand matches anything (the caller then ranks the newest matches of the whole
    query)."""
    taken: list[str] = []
    total = 0
    for count, operand in sorted(zip(counts, operands, strict=True), key=lambda pair: pair[0]):
        if count == 0:
            continue
        if total + count > pool or (texts is not None and 2 * count > texts):
            break
        taken.append(operand)
        total += count
    if not taken:
        return None
    matching = sum(1 for count in counts if count > 0)
    return Seeds(" OR ".join(taken), len(taken) < matching, operands=tuple(taken))


def capped_totals(counts: Sequence[Mapping[_Target, int]], cap: int) -> list[int]:
    """Each operand's matches in all targets together, up to ``cap`` (the totals
    :func:`choose_seeds` compares), from its counts by target."""
    return [min(cap, sum(by_target.values())) for by_target in counts]


def holding_targets(
    seeds: Seeds, operands: Sequence[str], counts: Sequence[Mapping[_Target, int]]
) -> tuple[_Target, ...]:
    """The targets where ``seeds`` match, from each operand's ``counts`` by target (a
    seed's counts are below the cap: exact). A target without one has nothing to search."""
    by_operand = dict(zip(operands, counts, strict=True))
    return tuple(
        target
        for target in counts[0]
        if any(by_operand[operand][target] for operand in seeds.operands)
    )
