"""Assembly: the active context as one request's messages, within the budget.

Items are kept in context order (summaries first, then raw messages). When they do not
fit, whole blocks are dropped from the oldest end (summaries first); the newest user
message is never dropped, and a tool call never loses its results.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from ctxengine_host.tokens import REPLY_PRIMER_TOKENS

from .store import ContextItem

Message = dict[str, Any]

_RECALL = (
    "When a detail matters (a value, a name, an error, code), recover it instead of "
    "guessing: lcm_grep searches the full history (full text or regex), lcm_expand(id) "
    "returns a summary's sources or a message verbatim, lcm_describe(id) shows an id's "
    "metadata and lineage."
)
#: The addition when the request carries summaries.
SYSTEM_PROMPT_ADDITION = (
    "Lossless context: earlier parts of this conversation appear as [Summary sum_N ...] "
    "entries; every original message is still stored verbatim. " + _RECALL
)
#: The addition when it carries none: it must not claim summaries that are not there.
SYSTEM_PROMPT_ADDITION_NO_SUMMARIES = (
    "Lossless context: every message of this conversation is stored verbatim, including "
    "any that are not shown here. " + _RECALL
)


def system_prompt_addition(with_summaries: bool) -> str:
    """The addition that describes the request as it is."""
    return SYSTEM_PROMPT_ADDITION if with_summaries else SYSTEM_PROMPT_ADDITION_NO_SUMMARIES


def blocks_of(messages: Sequence[Message], tokens: Sequence[int]) -> list[tuple[int, int, int]]:
    """Atomic blocks as (start, end, tokens): a tool-calling assistant with its results."""
    blocks: list[tuple[int, int, int]] = []
    for i, message in enumerate(messages):
        joins = (
            message.get("role") == "tool"
            and blocks
            and messages[blocks[-1][0]].get("role") == "assistant"
            and messages[blocks[-1][0]].get("tool_calls")
        )
        if joins:
            start, _, total = blocks[-1]
            blocks[-1] = (start, i + 1, total + tokens[i])
        else:
            blocks.append((i, i + 1, tokens[i]))
    return blocks


class Fit(NamedTuple):
    """One request's messages within the budget, with what extending it needs."""

    #: ``head`` plus the kept items, finalized.
    messages: list[Message]
    #: The exact count of ``messages``.
    tokens: int
    #: The per-item figure before anything was dropped: head, every item and the primer.
    estimate: int
    #: Whether every item was kept.
    complete: bool


def fit_to_budget(
    head: list[Message],
    items: list[Message],
    item_tokens: list[int],
    budget: int,
    count: Callable[[list[Message]], int],
    finalize: Callable[[list[Message]], list[Message]] = list,
    task: int | None = -1,
) -> Fit:
    """``head`` plus the newest blocks of ``items`` that fit ``budget``.

    Per-item counts choose what to drop; ``finalize`` shapes the kept items (e.g. merges
    the summaries into one message) and the final figure is counted exactly on the result.
    ``task`` is the index of the item always kept (the task message; user-role summaries
    are not it); -1 means the newest user-role item.
    """
    blocks = blocks_of(items, item_tokens)
    if task == -1:
        newest_user = next(
            (
                b
                for b in range(len(blocks) - 1, -1, -1)
                if items[blocks[b][0]].get("role") == "user"
            ),
            None,
        )
    else:
        newest_user = next((b for b, block in enumerate(blocks) if block[0] == task), None)
    head_tokens = count(head) - REPLY_PRIMER_TOKENS if head else 0
    # Blocks go oldest first; the newest block and the newest user message always stay.
    droppable = [b for b in range(len(blocks) - 1) if b != newest_user]
    dropped = 0
    estimate = total = head_tokens + sum(item_tokens) + REPLY_PRIMER_TOKENS
    while True:
        while total > budget and dropped < len(droppable):
            total -= blocks[droppable[dropped]][2]
            dropped += 1
        # What stays: every block from the oldest one not dropped, and the newest user
        # message if it is older than that.
        cut = droppable[dropped] if dropped < len(droppable) else max(len(blocks) - 1, 0)
        keep = list(range(cut, len(blocks)))
        if newest_user is not None and newest_user < cut:
            keep.insert(0, newest_user)
        messages = head + finalize([m for k in keep for m in items[blocks[k][0] : blocks[k][1]]])
        exact = count(messages)
        if exact <= budget or dropped == len(droppable):
            return Fit(messages, exact, estimate, dropped == 0)
        # Per-item counts undershot the exact figure: go on from the exact one.
        total = exact


def extend_fit(
    previous: Fit,
    head: list[Message],
    appended: list[Message],
    appended_tokens: int,
    budget: int,
) -> Fit | None:
    """What :func:`fit_to_budget` gives for ``previous``'s items plus ``appended`` (messages,
    no summaries, each counting ``appended_tokens`` in all, per item and exactly alike),
    when ``previous`` kept every item and the sum still fits; None when it must run again.

    Nothing is dropped then, so the full path would keep every block and count the same
    messages; the exact count is the previous one plus the appended messages' counts when
    the counter is additive (the caller's condition). Between two requests of an agent loop
    usually one to three messages were appended: this spares rebuilding the blocks and
    counting the whole request again.
    """
    if not previous.complete:
        return None
    estimate = previous.estimate + appended_tokens
    tokens = previous.tokens + appended_tokens
    if estimate > budget or tokens > budget:
        return None
    return Fit(head + previous.messages[len(head) :] + appended, tokens, estimate, True)


def merge_leading(
    messages: list[Message],
    is_summary: Callable[[Message], bool],
    role: str,
    join: Callable[[tuple[str, ...]], str] = "\n\n".join,
) -> list[Message]:
    """The leading summary messages joined into one message (oldest first), the rest unchanged."""
    n = 0
    while n < len(messages) and is_summary(messages[n]):
        n += 1
    if n == 0:
        return list(messages)
    merged = {"role": role, "content": join(tuple(m["content"] for m in messages[:n]))}
    return [merged, *messages[n:]]


class SummaryJoiner:
    """The leading summaries' texts joined as :func:`merge_leading` joins them, the same
    string object while the same summaries lead (an engine's rendered summaries are cached
    objects): each request sends it again, 35 KB on average in the 2,000-turn replay (1,272
    distinct texts in 5,563 requests), and a string made once is hashed once, wherever the
    host or the engine looks its count up."""

    #: Joined texts kept; a request's budget fitting may try a few leading sets.
    LIMIT = 8

    def __init__(self) -> None:
        self._joined: dict[tuple[str, ...], str] = {}

    def __call__(self, contents: tuple[str, ...]) -> str:
        joined = self._joined.get(contents)
        if joined is None:
            if len(self._joined) >= self.LIMIT:
                self._joined.clear()
            joined = self._joined[contents] = "\n\n".join(contents)
        return joined


def expand_summaries(
    summaries: Sequence[ContextItem],
    room: int,
    sources: Callable[[ContextItem], list[ContextItem]],
) -> tuple[dict[int, list[ContextItem]], int]:
    """Condensed ``summaries`` opened into their source summaries, deepest (then oldest)
    first, while the extra tokens fit ``room``: per summary opened, the items shown in its
    place, and the extra tokens.

    Compaction keeps the summaries within their budget, so the top of the DAG stands for
    most of a long session in a few condensed summaries, each a line of a line of what
    its leaves said (issue #16: 34 of 50 answers in the context of a 2,000-turn tuning
    session, against 50 for one rolling summary). Room the request has beyond them is
    spent on the finer levels below, where the facts a condensation dropped are written.
    """
    shown = [(s.ref_id, s) for s in summaries]
    skipped: set[int] = set()
    extra = 0
    while True:
        candidates = [
            i
            for i, (_, s) in enumerate(shown)
            if s.kind == "summary" and s.depth > 0 and s.ref_id not in skipped
        ]
        if not candidates:
            break
        index = max(candidates, key=lambda i: (shown[i][1].depth, -i))
        origin, summary = shown[index]
        children = sources(summary)
        cost = sum(c.token_count for c in children) - summary.token_count
        if not children or extra + cost > room:
            skipped.add(summary.ref_id)
            continue
        shown[index : index + 1] = [(origin, c) for c in children]
        extra += cost
    opened: dict[int, list[ContextItem]] = {}
    for origin, summary in shown:
        opened.setdefault(origin, []).append(summary)
    return {k: v for k, v in opened.items() if v[0].ref_id != k or len(v) > 1}, extra
