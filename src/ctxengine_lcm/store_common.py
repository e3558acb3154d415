"""Backend-independent parts of an LCM store: row shaping and the wrappers around the SQL.

:class:`ctxengine_lcm.sqlite_store.SqliteStore` and :class:`ctxengine_lcm.pg_store.PgLcmStore`
differ only in their SQL; what they do with the rows is written once here so the two
backends cannot drift apart.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from .store import (
    Appended,
    ContextItem,
    Conversation,
    Grant,
    NewMessage,
    NewSummary,
    SearchHit,
    StoredMessage,
    StoredSummary,
)


class DeadlinePassed(Exception):
    """Raised inside a transaction to roll it back: the caller's deadline has passed."""


def message_from_row(row: Sequence[Any]) -> StoredMessage:
    """A message row (``_MESSAGE_COLUMNS`` order); ``externalized`` is stored as an integer."""
    return StoredMessage(*row[:11], bool(row[11]), row[12])


def summary_insert_params(conversation_id: int, summary: NewSummary) -> tuple[Any, ...]:
    """The values of a summary row, in the column order both backends insert."""
    return (
        conversation_id,
        summary.kind,
        summary.depth,
        summary.content,
        summary.token_count,
        summary.earliest_at,
        summary.latest_at,
        summary.first_seq,
        summary.last_seq,
        summary.descendant_messages,
        summary.descendant_summaries,
        summary.source_tokens,
        time.time(),
        summary.summarizer_level,
    )


def grant_insert_params(grant: Grant) -> tuple[Any, ...]:
    """The values of a new grant row, in the column order both backends insert."""
    return (
        grant.child_session_id,
        grant.parent_session_id,
        grant.max_depth,
        grant.token_cap,
        grant.expires_at,
        time.time(),
    )


def first_unseen(messages: Sequence[NewMessage], seen: set[str]) -> list[NewMessage]:
    """``messages`` whose uids are not in ``seen`` (stored already), first of repeats kept."""
    fresh: list[NewMessage] = []
    for m in messages:
        if m.message_uid not in seen:
            seen.add(m.message_uid)
            fresh.append(m)
    return fresh


def appended(
    conversation_id: int,
    fresh: Sequence[NewMessage],
    first_seq: int,
    item_rows: Iterable[Sequence[Any]],
    version: int,
) -> Appended:
    """The record of an append, from the stored messages and their context items' rows
    (ordinal, message id): the ids come from the database, everything else is known."""
    items = [
        ContextItem(ordinal, "message", ref, m.context_tokens, -1, m.role)
        for (ordinal, ref), m in zip(sorted(item_rows), fresh, strict=True)
    ]
    stored = [
        StoredMessage(id=i.ref_id, conversation_id=conversation_id, seq=first_seq + n, **vars(m))
        for n, (i, m) in enumerate(zip(items, fresh, strict=True))
    ]
    return Appended(tuple(stored), tuple(items), version)


def run_unchanged(current: Iterable[Sequence[Any]], items: Sequence[ContextItem]) -> bool:
    """Whether the context rows read under the write lock are still the run being replaced."""
    return [tuple(r) for r in current] == [(i.ordinal, i.kind, i.ref_id) for i in items]


def scan_hits(target: str, rows: Sequence[Sequence[Any]]) -> tuple[list[SearchHit], int]:
    """One page of a recency scan as hits, and the cursor the next page starts below."""
    kind = "message" if target == "messages" else "summary"
    hits = [SearchHit(kind, r[0], r[1], r[2], r[3], r[4], r[5], r[6]) for r in rows]
    cursor = rows[-1][5] if target == "messages" else rows[-1][0]
    return hits, cursor


def stats_report(
    conv: Conversation, items: int, depth_rows: Iterable[Sequence[Any]]
) -> dict[str, Any]:
    """The ``stats`` answer both backends give."""
    return {
        "conversation_id": conv.id,
        "stored_messages": conv.message_count,
        "context_items": items,
        "context_tokens": conv.context_tokens,
        "context_summaries_by_depth": {str(d): n for d, n in depth_rows},
    }


class StoreCommon:
    """Methods of an LCM store that only call other store methods, shared by both backends."""

    # What each backend implements in its own SQL.
    messages_by_id: Callable[[Iterable[int]], dict[int, StoredMessage]]
    summaries_by_id: Callable[[Iterable[int]], dict[int, StoredSummary]]
    session_conversation_ids: Callable[[str], list[int]]
    active_grants: Callable[[str, float], list[Grant]]
    _replace_with_summary: Callable[
        [int, Sequence[ContextItem], NewSummary, float | None], int | None
    ]
    append: Callable[[int, Sequence[NewMessage]], Appended]

    def append_messages(self, conversation_id: int, messages: Sequence[NewMessage]) -> int:
        """Store new messages and append them to the active context; returns how many were
        new (known uids are skipped)."""
        return len(self.append(conversation_id, messages).messages)

    def message(self, message_id: int) -> StoredMessage | None:
        return self.messages_by_id([message_id]).get(message_id)

    def summary(self, summary_id: int) -> StoredSummary | None:
        return self.summaries_by_id([summary_id]).get(summary_id)

    def access_scope(self, session_id: str, now: float) -> tuple[list[int], list[Grant]]:
        """Two reads here; a server backend overrides it with one statement."""
        return self.session_conversation_ids(session_id), self.active_grants(session_id, now)

    def replace_with_summary(
        self,
        conversation_id: int,
        items: Sequence[ContextItem],
        summary: NewSummary,
        deadline: float | None = None,
    ) -> int | None:
        """Replace a contiguous run of context items by one new summary, atomically.

        Returns the new summary id, or None when the run changed meanwhile (another
        writer got there first) or the deadline passed before the commit.
        """
        try:
            return self._replace_with_summary(conversation_id, items, summary, deadline)
        except DeadlinePassed:
            return None

    def _grants_with_scope(self, rows: Iterable[Sequence[Any]]) -> list[Grant]:
        """Grants from their rows, each given the conversations of its parent session."""
        grants = [Grant(*r) for r in rows]
        for grant in grants:
            grant.conversation_ids = self.session_conversation_ids(grant.parent_session_id)
        return grants
