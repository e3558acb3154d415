"""Compaction: leaf and condensed passes over a conversation's active context.

Planning is pure (functions of the context items); :class:`Compactor` runs the passes,
each one a summarizer call followed by one atomic store transaction. A pass reads only
the active context and the chunk it summarizes, so its cost does not depend on how
much history the store holds.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from ctxengine_host.contract.messages import well_formed_text

from .config import MIN_LEAF_SOURCE_TOKENS, LcmConfig
from .render import context_message, source_block, storable_text, summary_message
from .store import ContextItem, LcmStore, NewSummary, StoredSummary

#: Characters per token assumed when a summary must be cut to size deterministically.
_CHARS_PER_TOKEN = 4
#: Reference size for planning when the window is unknown.
_FALLBACK_THRESHOLD = 24_000
#: A placeholder id of typical width, to count a summary's tokens before it has an id.
_PLACEHOLDER_ID = 100_000
#: Summary targets never exceed these shares of the threshold: the configured 1,000 /
#: 1,200 tokens fit beside the tail of a 32k window, not of a 4k or 8k one.
LEAF_TARGET_SHARE = 0.04
CONDENSED_TARGET_SHARE = 0.05
#: The smallest target worth asking for (a structured summary's headings and a few lines).
MIN_TARGET_TOKENS = 64


class _NoGain(Exception):
    """The summary would not be smaller than what it replaces: nothing to commit."""


def summary_targets(config: LcmConfig, threshold: int) -> tuple[int, int]:
    """Leaf and condensed summary targets for a window's ``threshold``: the configured
    sizes, scaled down for small windows so that summaries and the tail still fit."""

    def scaled(configured: int, share: float) -> int:
        return max(min(configured, MIN_TARGET_TOKENS), min(configured, int(threshold * share)))

    return (
        scaled(config.leaf_target_tokens, LEAF_TARGET_SHARE),
        scaled(config.condensed_target_tokens, CONDENSED_TARGET_SHARE),
    )


def room_target(configured: int, floor: int, room: int) -> int:
    """A pass's summary target: half the room the summary budget has left beside the other
    summaries, between the window-scaled ``floor`` and the ``configured`` size.

    At a small window the scaled targets are a few dozen tokens beside a header of as
    many, while most of the budget stays empty (issue #16: an 8k window's leaves of
    2,600 tokens got 116 and lost the versions a rolling summary kept); taking half the
    room each time fills the budget the way a halving series does, so the first
    summaries get the room and later ones still find some.
    """
    return max(floor, min(configured, room // 2))


def fresh_tail_start(
    items: Sequence[ContextItem], config: LcmConfig, threshold: int, bounded: bool = False
) -> int:
    """Index of the first protected item: the newest raw messages, bounded in count and tokens.

    The newest message is always in the tail (with its tool call), but the tail never
    grows past ``fresh_tail_messages`` or ``fresh_tail_max_fraction`` of the threshold: in a
    single long agent loop the newest user turn is the whole history, and protecting it
    whole would leave nothing to summarize. The task message itself is pinned separately
    (:func:`pinned_task`).

    The tail does not begin with a tool result whose call would be summarized away: it
    takes the call in. ``bounded``: only while the token bound allows, else it begins
    after the results, which are summarized with their call (the sweep asks for this
    when the whole raw run would otherwise stay in the tail past the threshold).
    """
    budget = config.fresh_tail_max_fraction * threshold
    start, count, tokens = len(items), 0, 0
    while start > 0 and items[start - 1].kind == "message":
        candidate = items[start - 1]
        within = count < config.fresh_tail_messages and tokens + candidate.token_count <= budget
        if count and not within:
            break
        start -= 1
        count += 1
        tokens += candidate.token_count
    with_call = start
    while (
        0 < with_call < len(items)
        and items[with_call].role == "tool"
        and items[with_call - 1].kind == "message"
    ):
        with_call -= 1
    if not bounded or with_call == start:
        return with_call
    if tokens + sum(i.token_count for i in items[with_call:start]) <= budget:
        return with_call
    after = start
    while after < len(items) and items[after].role == "tool":
        after += 1
    return after if after < len(items) else with_call


def pinned_task(items: Sequence[ContextItem]) -> int | None:
    """Index of the newest user message (the task being worked on): never summarized."""
    return next(
        (
            i
            for i in range(len(items) - 1, -1, -1)
            if items[i].kind == "message" and items[i].role == "user"
        ),
        None,
    )


def leaf_chunk(
    items: Sequence[ContextItem],
    tail_start: int,
    chunk_tokens: int,
    min_tokens: int = MIN_LEAF_SOURCE_TOKENS,
    pinned: int | None = None,
    enough_tokens: int | None = None,
) -> list[int]:
    """Indexes of the oldest raw run outside the tail worth a summary, tool results kept
    with their call; empty when there is none.

    The run stops before the message that would take it over ``chunk_tokens``, unless it
    is still under ``min_tokens``: a chunk too small to be worth a summary would stall
    every sweep (e.g. a small message followed by a large one, or a tiny chunk size).
    It also stops once it holds ``enough_tokens`` (what the sweep must free to reach its
    target): summarizing more would leave the request room unused until the next sweep.
    The ``pinned`` item (the task) is never part of a run: runs stop before it and the
    next one starts after it. A run that a summary or the task cuts off under
    ``min_tokens`` is passed over for the next one (a previous turn's task, pinned while
    its tool loop was summarized, now sits alone between summaries).
    """
    enough = chunk_tokens if enough_tokens is None else enough_tokens
    start = 0
    while True:
        first = next(
            (i for i in range(start, tail_start) if items[i].kind == "message" and i != pinned),
            None,
        )
        if first is None:
            return []
        end, tokens = first, 0
        while end < tail_start and items[end].kind == "message" and end != pinned:
            over = tokens + items[end].token_count > chunk_tokens
            if end > first and tokens >= min_tokens and (over or tokens >= enough):
                break
            tokens += items[end].token_count
            end += 1
        while (
            end < tail_start
            and items[end].kind == "message"
            and items[end].role == "tool"
            and end != pinned
        ):
            tokens += items[end].token_count
            end += 1
        if tokens >= min_tokens:
            return list(range(first, end))
        start = end


def stranded_run(items: Sequence[ContextItem], tail_start: int, pinned: int | None) -> list[int]:
    """Indexes of the oldest raw run outside the tail that sits beside a summary; empty when
    there is none. Called when :func:`leaf_chunk` finds nothing: every such run is then too
    small for a leaf of its own.

    A multi-turn session strands its turns' tasks: the task is pinned while its tool loop
    is summarized, so once the next task arrives it sits alone between the summary before it
    and the loop's. It keeps the two summaries apart, so they cannot condense, and each
    turn adds a summary and a stranded task until requests must leave history out (an
    8,000-token window's 300-turn session: every request after turn 56).
    """
    start = 0
    while start < tail_start:
        if items[start].kind != "message" or start == pinned:
            start += 1
            continue
        end = start
        while end < tail_start and items[end].kind == "message" and end != pinned:
            end += 1
        before = start > 0 and items[start - 1].kind == "summary"
        after = end < len(items) and items[end].kind == "summary"
        if before or after:
            return list(range(start, end))
        start = end
    return []


def condense_run(items: Sequence[ContextItem], fanin: int) -> list[int]:
    """Summaries to condense next (asked for once the summaries pass their budget), oldest
    first: ``fanin`` consecutive summaries of one depth, else the oldest consecutive pair
    of one depth, and only when every depth is distinct the two oldest summaries: merges
    stay balanced like a binary counter, so the DAG grows logarithmically deep rather than
    into one long chain.
    """
    runs: list[list[int]] = []
    for i, item in enumerate(items):
        if item.kind == "summary":
            if runs and runs[-1][-1] == i - 1:
                runs[-1].append(i)
            else:
                runs.append([i])
    for width in (fanin, 2):
        for run in runs:
            for start in range(len(run) - width + 1):
                window = run[start : start + width]
                if len({items[i].depth for i in window}) == 1:
                    return window
    for run in runs:
        if len(run) >= 2:
            return run[:2]
    return []


@dataclass
class SweepReport:
    """What one sweep did."""

    passes: int = 0
    leaf_passes: int = 0
    condensed_passes: int = 0
    tokens_before: int = 0
    tokens_after: int = 0
    summary_ids: list[int] = field(default_factory=list)
    stopped: str | None = None
    error: str | None = None


class Compactor:
    """Runs sweeps for one engine clone; the summarizer and counter come from the host."""

    def __init__(self, store: LcmStore, config: LcmConfig, context: Any) -> None:
        self.store = store
        self.config = config
        self.context = context

    def sweep(
        self,
        conversation_id: int,
        threshold: int,
        force: bool = False,
        focus_topic: str | None = None,
        deadline: float | None = None,
    ) -> SweepReport:
        """Compact until the context is under target, within the pass and time limits."""
        cfg = self.config
        conversation = self.store.conversation(conversation_id)
        report = SweepReport(tokens_before=conversation.context_tokens)
        reference = threshold or (conversation.context_tokens if force else _FALLBACK_THRESHOLD)
        target = int(reference * cfg.compact_target_fraction)
        summary_budget = int(reference * cfg.summary_budget_fraction)
        leaf_target, condensed_target = summary_targets(cfg, reference)
        while report.passes < cfg.max_passes_per_sweep:
            if deadline is not None and time.monotonic() >= deadline:
                report.stopped = "deadline"
                break
            items = self.store.context_items(conversation_id)
            total = sum(i.token_count for i in items)
            summary_tokens = sum(i.token_count for i in items if i.kind == "summary")
            # Condensing loses detail (a leaf's facts become a line of a line): summaries
            # are condensed once they pass their budget, not as soon as fanin of them exist.
            over_budget = summary_tokens > summary_budget
            past_threshold = total > reference
            run = condense_run(items, cfg.condense_fanin) if over_budget else []
            pinned = pinned_task(items)
            tail = fresh_tail_start(items, cfg, reference)
            room = summary_budget - summary_tokens
            leaf_size = room_target(cfg.leaf_target_tokens, leaf_target, room)
            chunk: list[int] = []
            if not run and (total > target or (force and report.leaf_passes == 0)):
                # While the new leaf fits the summary budget, free what reaching the target
                # takes, not all there is: what a sweep leaves under its target is room the
                # requests hold nothing in (issue #16: a 24k context swept down to 5k). Once
                # the budget is full every extra leaf costs a condensation: the whole chunk.
                enough = total - target + leaf_size if room >= leaf_size else None
                chunk_outside = partial(
                    leaf_chunk,
                    items,
                    chunk_tokens=cfg.leaf_chunk_tokens,
                    pinned=pinned,
                    enough_tokens=enough,
                )
                chunk = chunk_outside(tail)
                if not chunk and past_threshold:
                    # Past the threshold with every raw message in the tail (a large tool
                    # call taken in with its result): the request would have to leave
                    # summaries out, so the tail keeps to its token bound.
                    chunk = chunk_outside(fresh_tail_start(items, cfg, reference, bounded=True))
            if past_threshold and not run and not chunk:
                # No raw message to spare past the threshold (the task and the newest step
                # fill what the summaries leave): the request would leave summaries out, so
                # they condense under their budget too.
                run = condense_run(items, cfg.condense_fanin)
            # Past the budget (or the threshold) with no summaries side by side to condense
            # and no run worth a leaf: a run stranded between summaries is summarized all
            # the same (its leaf may be larger than itself), so the next pass condenses it.
            stranded = (over_budget or past_threshold) and not run and not chunk
            if stranded:
                chunk = stranded_run(items, tail, pinned)
            if not run and not chunk:
                report.stopped = "done" if total <= target else "nothing-compactable"
                break
            try:
                if run:
                    new_id = self._condense(
                        conversation_id,
                        [items[i] for i in run],
                        room_target(
                            cfg.condensed_target_tokens,
                            condensed_target,
                            room + sum(items[i].token_count for i in run),
                        ),
                        focus_topic,
                        deadline,
                    )
                else:
                    new_id = self._leaf(
                        conversation_id,
                        [items[i] for i in chunk],
                        leaf_size,
                        focus_topic,
                        deadline,
                        may_grow=stranded,
                    )
            except _NoGain:
                report.stopped = "no-gain"
                break
            except Exception as exc:
                # A summarizer that fails for good ends the sweep, not the turn.
                report.error = f"{type(exc).__name__}: {exc}"
                report.stopped = "summarizer-error"
                break
            if new_id is None:
                report.stopped = (
                    "deadline" if deadline and time.monotonic() >= deadline else "raced"
                )
                break
            report.passes += 1
            report.summary_ids.append(new_id)
            if run:
                report.condensed_passes += 1
            else:
                report.leaf_passes += 1
        else:
            report.stopped = "pass-limit"
        report.tokens_after = self.store.conversation(conversation_id).context_tokens
        return report

    def _leaf(
        self,
        conversation_id: int,
        chunk: list[ContextItem],
        target_tokens: int,
        focus_topic: str | None,
        deadline: float | None,
        may_grow: bool = False,
    ) -> int | None:
        stored = self.store.messages_by_id(i.ref_id for i in chunk)
        ordered = [stored[i.ref_id] for i in chunk]
        messages = [context_message(m, self.config.large_output_preview_chars) for m in ordered]
        for message in messages:
            message.pop("message_uid", None)
        source_tokens = sum(i.token_count for i in chunk)
        text, level = self._summarize(messages, target_tokens, source_tokens, focus_topic)
        draft = NewSummary(
            kind="leaf",
            depth=0,
            content=text,
            token_count=0,
            earliest_at=min(m.created_at for m in ordered),
            latest_at=max(m.created_at for m in ordered),
            first_seq=ordered[0].seq,
            last_seq=ordered[-1].seq,
            descendant_messages=len(ordered),
            descendant_summaries=0,
            source_tokens=sum(m.token_count for m in ordered),
            summarizer_level=level,
            source_ids=tuple(m.id for m in ordered),
        )
        return self._commit(conversation_id, chunk, draft, deadline, may_grow)

    def _condense(
        self,
        conversation_id: int,
        run: list[ContextItem],
        target_tokens: int,
        focus_topic: str | None,
        deadline: float | None,
    ) -> int | None:
        found = self.store.summaries_by_id(i.ref_id for i in run)
        sources = [found[i.ref_id] for i in run]
        source_tokens = sum(i.token_count for i in run)
        text, level = self._summarize(
            "\n\n".join(source_block(s) for s in sources),
            target_tokens,
            source_tokens,
            focus_topic,
        )
        draft = NewSummary(
            kind="condensed",
            depth=max(s.depth for s in sources) + 1,
            content=text,
            token_count=0,
            earliest_at=min(s.earliest_at for s in sources),
            latest_at=max(s.latest_at for s in sources),
            first_seq=min(s.first_seq for s in sources),
            last_seq=max(s.last_seq for s in sources),
            descendant_messages=sum(s.descendant_messages for s in sources),
            descendant_summaries=sum(s.descendant_summaries + 1 for s in sources),
            source_tokens=source_tokens,
            summarizer_level=level,
            source_ids=tuple(s.id for s in sources),
        )
        return self._commit(conversation_id, run, draft, deadline)

    def _commit(
        self,
        conversation_id: int,
        items: list[ContextItem],
        draft: NewSummary,
        deadline: float | None,
        may_grow: bool = False,
    ) -> int | None:
        """Store ``draft`` in place of ``items``; unless ``may_grow``, only if it is smaller."""
        placeholder = StoredSummary(
            _PLACEHOLDER_ID, conversation_id, draft.kind, draft.depth, draft.content, 0,
            draft.earliest_at, draft.latest_at, draft.first_seq, draft.last_seq,
            draft.descendant_messages, draft.descendant_summaries, draft.source_tokens, 0.0,
            draft.summarizer_level,
        )  # fmt: skip
        tokens = self.context.count_tokens(summary_message(placeholder, self.config.summary_role))
        if not may_grow and tokens >= sum(i.token_count for i in items):
            raise _NoGain
        summary = NewSummary(**{**draft.__dict__, "token_count": tokens})
        return self.store.replace_with_summary(conversation_id, items, summary, deadline)

    def _summarize(
        self,
        content: str | list[dict[str, Any]],
        target_tokens: int,
        source_tokens: int,
        focus_topic: str | None,
    ) -> tuple[str, int]:
        """Summary text and escalation level; always smaller than the source, so sweeps converge."""
        result = self.context.summarize(
            content, target_tokens=target_tokens, focus_topic=focus_topic
        )
        # A model's text may hold half of a character (its JSON can carry "\ud83d" alone),
        # which no store can encode: kept as U+FFFD, as in a message.
        text = well_formed_text((result.text or "").strip())
        level = int(result.level)
        limit = max(16, min(int(target_tokens * 1.5), source_tokens // 2))
        if not text or self.context.count_tokens(text) > limit:
            text = _cut_to_tokens(text or _as_text(content), limit, self.context.count_tokens)
            level = 2
        return storable_text(text), level


def _as_text(content: str | list[dict[str, Any]]) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(f"{m.get('role')}: {m.get('content') or ''}" for m in content)


def _cut_to_tokens(text: str, limit: int, count: Any) -> str:
    """A deterministic prefix of ``text`` within ``limit`` tokens (the last-resort summary),
    ending at a line break when one keeps at least half of it (so that no summary line,
    a quoted tool output among them, is cut in the middle)."""
    cut = text[: limit * _CHARS_PER_TOKEN]
    while cut and count(cut) > limit:
        cut = cut[: int(len(cut) * 0.8)]
    if len(cut) < len(text):
        line_end = cut.rfind("\n")
        cut = cut[:line_end] if line_end >= len(cut) // 2 else cut
    return cut + " […]"
