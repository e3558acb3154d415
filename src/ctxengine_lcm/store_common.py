"""Backend-independent parts of an LCM store: row shaping and the statements both share.

:class:`ctxengine_lcm.sqlite_store.SqliteStore` and :class:`ctxengine_lcm.pg_store.PgLcmStore`
differ in connections, schema, search and set-based inserts; every statement that differs
only in table names and placeholders is written once here, spelled through the store's
:class:`~ctxengine_lcm.sql.Dialect`, so the two backends cannot drift apart.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from typing import Any, Literal

from .faults import fault_point
from .sql import CONVERSATION_COLUMNS, GRANT_COLUMNS, Dialect
from .store import (
    AccessScope,
    Appended,
    ContextItem,
    Conversation,
    Grant,
    ItemKind,
    MatchCounts,
    NewMessage,
    NewSummary,
    SearchHit,
    StoredMessage,
    StoredSummary,
    SummaryKind,
)

#: Rows fetched per query while scanning for a regex.
_SCAN_PAGE = 500


class DeadlinePassed(Exception):
    """Raised inside a transaction to roll it back: the caller's deadline has passed."""


def message_from_row(row: Sequence[Any]) -> StoredMessage:
    """A message row (``_MESSAGE_COLUMNS`` order); ``externalized`` is stored as an integer."""
    return StoredMessage(*row[:11], bool(row[11]), row[12], row[13])  # type: ignore[call-arg]


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


def first_unseen(messages: Sequence[NewMessage], seen: set[tuple[str, str]]) -> list[NewMessage]:
    """``messages`` whose versions (uid, digest) are not in ``seen`` (stored already),
    first of repeats kept."""
    fresh: list[NewMessage] = []
    for m in messages:
        version = (m.message_uid, m.digest)
        if version not in seen:
            seen.add(version)
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
    rows = tuple((ordinal, ref) for ordinal, ref in sorted(item_rows, key=tuple))
    return Appended(version, conversation_id, first_seq, rows, tuple(fresh))


def run_unchanged(current: Iterable[Sequence[Any]], items: Sequence[ContextItem]) -> bool:
    """Whether the context rows read under the write lock are still the run being replaced."""
    return [tuple(r) for r in current] == [(i.ordinal, i.kind, i.ref_id) for i in items]


def _scan_page_sql(
    d: Dialect, target: Literal["messages", "summaries"], scope: str, below: bool
) -> str:
    """A page of a recency scan over the rows in ``scope`` (alias ``m`` or ``s``), below
    the cursor when ``below``, in the column order :func:`_scan_hits` reads."""
    if target == "messages":
        return (
            "SELECT m.id, m.conversation_id, m.created_at, m.content, m.role, m.seq, "
            f"-1, m.tool_name IS NOT NULL FROM {d.messages} m WHERE {scope}"
            + (f" AND m.seq < {d.p}" if below else "")
            + f" ORDER BY m.seq DESC LIMIT {d.p}"
        )
    return (
        "SELECT s.id, s.conversation_id, s.latest_at, s.content, '', "
        f"s.first_seq, s.depth, NULL FROM {d.summaries} s WHERE {scope}"
        + (f" AND s.id < {d.p}" if below else "")
        + f" ORDER BY s.id DESC LIMIT {d.p}"
    )


def _scan_hits(target: str, rows: Sequence[Sequence[Any]]) -> tuple[list[SearchHit], int]:
    """One page of a recency scan as hits, and the cursor the next page starts below."""
    kind: Literal["message", "summary"] = "message" if target == "messages" else "summary"
    hits = [
        SearchHit(kind, *r[:7], tool_call=None if r[7] is None else bool(r[7]))  # type: ignore[misc]
        for r in rows
    ]
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
    """What an LCM store does the same way on both backends, through its dialect."""

    _sql: Dialect
    # What each backend implements itself.
    _read: Callable[..., list[tuple]]
    _tx: Callable[[str], AbstractContextManager[Any]]
    _counters_and_fresh: Callable[
        [Any, int, Sequence[NewMessage]], tuple[int, int, list[NewMessage]]
    ]
    _insert_rows: Callable[[Any, int, list[NewMessage], int, int], Appended]
    _link_sources: Callable[[Any, str, str, int, Sequence[int]], None]
    _conversations_clause: Callable[[str, Sequence[int]], tuple[str, list[Any]]]
    _scan_page: Callable[[str, Sequence[Any]], list[tuple] | None]
    messages_by_id: Callable[[Iterable[int]], dict[int, StoredMessage]]
    match_counts_by_target: Callable[..., MatchCounts]
    summaries_by_id: Callable[[Iterable[int]], dict[int, StoredSummary]]

    # Conversations.

    def conversation(self, conversation_id: int) -> Conversation:
        d = self._sql
        rows = self._read(
            f"SELECT {CONVERSATION_COLUMNS} FROM {d.conversations} WHERE id={d.p}",
            (conversation_id,),
        )
        if not rows:
            raise KeyError(f"conversation {conversation_id} does not exist")
        return Conversation(*rows[0])

    def session_conversation_ids(self, session_id: str) -> list[int]:
        d = self._sql
        rows = self._read(
            f"SELECT id FROM {d.conversations} WHERE session_id={d.p} ORDER BY id DESC",
            (session_id,),
        )
        return [r[0] for r in rows]

    def newest_message_uid(self, conversation_id: int) -> str | None:
        d = self._sql
        rows = self._read(
            f"SELECT message_uid FROM {d.messages} WHERE conversation_id={d.p} "
            "ORDER BY seq DESC LIMIT 1",
            (conversation_id,),
        )
        return rows[0][0] if rows else None

    def claim_conversation(self, conversation_id: int, session_key: str) -> None:
        d = self._sql
        with self._tx("claiming a conversation") as conn:
            conn.execute(
                f"UPDATE {d.conversations} SET session_id={d.p} WHERE id={d.p}",
                (session_key, conversation_id),
            )

    # Messages.

    def known_version(self, conversation_id: int, message_uid: str, digest: str) -> bool:
        d = self._sql
        return bool(
            self._read(
                f"SELECT 1 FROM {d.messages} WHERE conversation_id={d.p} AND message_uid={d.p} "
                f"AND digest={d.p}",
                (conversation_id, message_uid, digest),
            )
        )

    def append_messages(self, conversation_id: int, messages: Sequence[NewMessage]) -> int:
        """Store new messages and append them to the active context; returns how many were
        new (known uids are skipped)."""
        return self.append(conversation_id, messages).count

    def append(self, conversation_id: int, messages: Sequence[NewMessage]) -> Appended:
        """Store new messages and append them to the active context; known uids are skipped.

        One transaction per call, which holds the conversation (its row lock on
        PostgreSQL), so concurrent appends get consecutive, gap-free sequence numbers.
        """
        if not messages:
            return Appended()
        with self._tx("storing messages") as conn:
            count, next_ordinal, fresh = self._counters_and_fresh(conn, conversation_id, messages)
            if not fresh:
                return Appended()
            return self._insert_rows(conn, conversation_id, fresh, count + 1, next_ordinal)

    def insert_messages_after(
        self, conversation_id: int, after_uid: str | None, messages: Sequence[NewMessage]
    ) -> int:
        """Store messages the engine missed right after the stored message ``after_uid``
        (None: before every stored message), in order; known uids are skipped.

        Later messages' sequence numbers (and the ranges of summaries over them) and later
        context items' ordinals move up, so the history order and the active context stay
        one walk. When ``after_uid`` lies under a summary that also covers later messages,
        the new ones go right after that summary's span: the nearest place the DAG allows.
        An unknown ``after_uid``, or the newest message, appends. One transaction.
        """
        if not messages:
            return 0
        with self._tx("inserting missed messages") as conn:
            count, next_ordinal, fresh = self._counters_and_fresh(conn, conversation_id, messages)
            if not fresh:
                return 0
            place = self._insertion_point(conn, conversation_id, after_uid, count)
            if place is None:
                self._insert_rows(conn, conversation_id, fresh, count + 1, next_ordinal)
                return len(fresh)
            first_seq, first_ordinal = place
            self._make_room(conn, conversation_id, first_seq, first_ordinal, len(fresh))
            self._insert_rows(conn, conversation_id, fresh, first_seq, first_ordinal)
            return len(fresh)

    def _insertion_point(
        self, conn: Any, conversation_id: int, after_uid: str | None, count: int
    ) -> tuple[int, int] | None:
        """(first seq, first ordinal) for messages placed after ``after_uid``; None: append."""
        d = self._sql
        if after_uid is None:
            if count == 0:
                return None
            (first_ordinal,) = conn.execute(
                f"SELECT COALESCE(MIN(ordinal), 0) FROM {d.context_items} "
                f"WHERE conversation_id={d.p}",
                (conversation_id,),
            ).fetchone()
            return 1, first_ordinal
        row = conn.execute(
            f"SELECT id, seq FROM {d.messages} WHERE conversation_id={d.p} AND message_uid={d.p} "
            "ORDER BY seq DESC LIMIT 1",
            (conversation_id, after_uid),
        ).fetchone()
        if row is None or row[1] >= count:
            return None
        message_id, seq = row
        held = conn.execute(
            f"SELECT ordinal FROM {d.context_items} WHERE conversation_id={d.p} "
            f"AND kind='message' AND ref_id={d.p}",
            (conversation_id, message_id),
        ).fetchone()
        if held is not None:
            return seq + 1, held[0] + 1
        covering = conn.execute(
            f"SELECT c.ordinal, s.last_seq FROM {d.context_items} c JOIN {d.summaries} s "
            f"ON s.id=c.ref_id WHERE c.conversation_id={d.p} AND c.kind='summary' "
            f"AND s.first_seq<={d.p} AND s.last_seq>={d.p}",
            (conversation_id, seq, seq),
        ).fetchone()
        if covering is None:
            return None
        return covering[1] + 1, covering[0] + 1

    def _make_room(
        self, conn: Any, conversation_id: int, first_seq: int, first_ordinal: int, k: int
    ) -> None:
        """Move sequence numbers from ``first_seq`` and ordinals from ``first_ordinal`` up
        by ``k``, and the summary ranges over the moved messages with them."""
        d = self._sql
        # Two steps through negative values: UNIQUE(conversation_id, seq) and the
        # ordinal key are checked row by row, so a plain +k could hit the next row.
        for table, column, first in (
            (d.messages, "seq", first_seq),
            (d.context_items, "ordinal", first_ordinal),
        ):
            conn.execute(
                f"UPDATE {table} SET {column}=-({column}+{d.p}) "
                f"WHERE conversation_id={d.p} AND {column}>={d.p}",
                (k, conversation_id, first),
            )
            conn.execute(
                f"UPDATE {table} SET {column}=-{column} WHERE conversation_id={d.p} AND {column}<0",
                (conversation_id,),
            )
        conn.execute(
            f"UPDATE {d.summaries} SET first_seq=first_seq+{d.p}, last_seq=last_seq+{d.p} "
            f"WHERE conversation_id={d.p} AND first_seq>={d.p}",
            (k, k, conversation_id, first_seq),
        )

    def message(self, message_id: int) -> StoredMessage | None:
        return self.messages_by_id([message_id]).get(message_id)

    # Summaries and lineage.

    def summary(self, summary_id: int) -> StoredSummary | None:
        return self.summaries_by_id([summary_id]).get(summary_id)

    def contents_by_id(self, kind: ItemKind, ids: Iterable[int]) -> dict[int, str]:
        """The stored texts of messages or summaries, by id (in one look-up)."""
        if kind == "message":
            return {i: m.content for i, m in self.messages_by_id(ids).items()}
        return {i: s.content for i, s in self.summaries_by_id(ids).items()}

    def beginnings_by_id(self, kind: ItemKind, ids: Iterable[int], chars: int) -> dict[int, str]:
        """The first ``chars`` characters of each text, by id (in one look-up): a long
        text read no further than its caller needs."""
        d = self._sql
        wanted = list(ids)
        if not wanted:
            return {}
        table = d.messages if kind == "message" else d.summaries
        marks = ", ".join([d.p] * len(wanted))
        rows = self._read(
            f"SELECT id, substr(content, 1, {d.p}) FROM {table} WHERE id IN ({marks})",
            (chars, *wanted),
        )
        return {row[0]: row[1] for row in rows}

    def summary_source_ids(self, summary_id: int) -> tuple[SummaryKind, list[int]]:
        d = self._sql
        summary = self.summary(summary_id)
        if summary is None:
            raise KeyError(f"summary {summary_id} does not exist")
        if summary.kind == "leaf":
            sql = f"SELECT message_id FROM {d.summary_messages} WHERE summary_id={d.p} ORDER BY ord"
        else:
            sql = f"SELECT source_id FROM {d.summary_sources} WHERE summary_id={d.p} ORDER BY ord"
        return summary.kind, [r[0] for r in self._read(sql, (summary_id,))]

    def parent_summary_of_message(self, message_id: int) -> int | None:
        d = self._sql
        rows = self._read(
            f"SELECT summary_id FROM {d.summary_messages} WHERE message_id={d.p}", (message_id,)
        )
        return rows[0][0] if rows else None

    def parent_summary_of_summary(self, summary_id: int) -> int | None:
        d = self._sql
        rows = self._read(
            f"SELECT summary_id FROM {d.summary_sources} WHERE source_id={d.p}", (summary_id,)
        )
        return rows[0][0] if rows else None

    # The active context.

    def context_items(self, conversation_id: int) -> list[ContextItem]:
        d = self._sql
        rows = self._read(
            f"SELECT ordinal, kind, ref_id, token_count, depth, role FROM {d.context_items} "
            f"WHERE conversation_id={d.p} ORDER BY ordinal",
            (conversation_id,),
        )
        return [ContextItem(*r) for r in rows]

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

    def _replace_with_summary(
        self,
        conversation_id: int,
        items: Sequence[ContextItem],
        summary: NewSummary,
        deadline: float | None,
    ) -> int | None:
        d = self._sql
        lo, hi = items[0].ordinal, items[-1].ordinal
        with self._tx("writing a summary") as conn:
            if d.row_lock:
                conn.execute(
                    f"SELECT 1 FROM {d.conversations} WHERE id={d.p}{d.row_lock}",
                    (conversation_id,),
                )
            current = conn.execute(
                f"SELECT ordinal, kind, ref_id FROM {d.context_items} "
                f"WHERE conversation_id={d.p} AND ordinal BETWEEN {d.p} AND {d.p} "
                "ORDER BY ordinal",
                (conversation_id, lo, hi),
            ).fetchall()
            if not run_unchanged(current, items):
                return None
            (summary_id,) = conn.execute(
                f"INSERT INTO {d.summaries}(conversation_id, kind, depth, content, token_count, "
                "earliest_at, latest_at, first_seq, last_seq, descendant_messages, "
                "descendant_summaries, source_tokens, created_at, summarizer_level) "
                f"VALUES ({d.marks(14)}) RETURNING id",
                summary_insert_params(conversation_id, summary),
            ).fetchone()
            table, column = (
                (d.summary_messages, "message_id")
                if summary.kind == "leaf"
                else (d.summary_sources, "source_id")
            )
            self._link_sources(conn, table, column, summary_id, summary.source_ids)
            conn.execute(
                f"DELETE FROM {d.context_items} WHERE conversation_id={d.p} "
                f"AND ordinal BETWEEN {d.p} AND {d.p}",
                (conversation_id, lo, hi),
            )
            conn.execute(
                f"INSERT INTO {d.context_items}(conversation_id, ordinal, kind, ref_id, "
                f"token_count, depth, role) VALUES ({d.p},{d.p},'summary',{d.p},{d.p},{d.p},'')",
                (conversation_id, lo, summary_id, summary.token_count, summary.depth),
            )
            conn.execute(
                f"UPDATE {d.conversations} SET context_tokens=context_tokens-{d.p}+{d.p}, "
                f"context_version=context_version+1 WHERE id={d.p}",
                (sum(i.token_count for i in items), summary.token_count, conversation_id),
            )
            fault_point("lcm.sweep.before_commit")
            if deadline is not None and time.monotonic() >= deadline:
                raise DeadlinePassed
        fault_point("lcm.sweep.after_commit")
        return summary_id

    # Search.

    def _scope_sql(
        self, alias: str, conversation_ids: Sequence[int], since: float | None, until: float | None
    ) -> tuple[str, list[Any]]:
        """Conditions keeping ``alias`` (``m`` messages, ``s`` summaries) to the given
        conversations and time range, and their parameters."""
        clause, params = self._conversations_clause(f"{alias}.conversation_id", conversation_ids)
        return self._time_scope(alias, clause, params, since, until)

    def _time_scope(
        self,
        alias: str,
        clause: str,
        params: list[Any],
        since: float | None,
        until: float | None,
    ) -> tuple[str, list[Any]]:
        """``clause`` and the time range: a message's time, or a summary's span overlapping it."""
        clauses, params = [clause], list(params)
        if since is not None:
            clauses.append(
                f"{alias}.{'created_at' if alias == 'm' else 'latest_at'} >= {self._sql.p}"
            )
            params.append(since)
        if until is not None:
            clauses.append(
                f"{alias}.{'created_at' if alias == 'm' else 'earliest_at'} <= {self._sql.p}"
            )
            params.append(until)
        return " AND ".join(clauses), params

    def scan_recent(
        self,
        conversation_ids: Sequence[int],
        target: Literal["messages", "summaries"],
        since: float | None,
        until: float | None,
        max_rows: int,
    ) -> Iterator[SearchHit]:
        """Rows newest first (conversation by conversation), at most ``max_rows`` of them;
        fewer when the backend gives up on a page (None)."""
        remaining = max_rows
        for conversation_id in sorted(conversation_ids, reverse=True):
            # One conversation: a plain equality lets the (conversation, seq) index give the
            # order, so each page is an index range read, not a sort of the history.
            alias = "m" if target == "messages" else "s"
            scope, params = self._time_scope(
                alias, f"{alias}.conversation_id = {self._sql.p}", [conversation_id], since, until
            )
            cursor: int | None = None
            while remaining > 0:
                below = [cursor] if cursor is not None else []
                sql = _scan_page_sql(self._sql, target, scope, bool(below))
                rows = self._scan_page(sql, [*params, *below, min(_SCAN_PAGE, remaining)])
                if rows is None:
                    return
                if not rows:
                    break
                remaining -= len(rows)
                hits, cursor = _scan_hits(target, rows)
                yield from hits
            if remaining <= 0:
                return

    # Sub-agent grants.

    def create_grant(self, grant: Grant) -> int:
        d = self._sql
        with self._tx("creating a grant") as conn:
            (grant_id,) = conn.execute(
                f"INSERT INTO {d.grants}(child_session_id, parent_session_id, max_depth, "
                f"token_cap, expires_at, created_at) VALUES ({d.marks(6)}) RETURNING id",
                grant_insert_params(grant),
            ).fetchone()
            return grant_id

    def active_grants(self, child_session_id: str, now: float) -> list[Grant]:
        d = self._sql
        rows = self._read(
            f"SELECT {GRANT_COLUMNS} FROM {d.grants} WHERE child_session_id={d.p} "
            f"AND (expires_at IS NULL OR expires_at > {d.p}) ORDER BY id",
            (child_session_id, now),
        )
        grants = [Grant(*r) for r in rows]
        for grant in grants:
            grant.conversation_ids = self.session_conversation_ids(grant.parent_session_id)
        return grants

    def access_scope(self, session_id: str, now: float) -> AccessScope:
        """Two reads here; a server backend overrides it with one statement."""
        return self.session_conversation_ids(session_id), self.active_grants(session_id, now)

    def access_scope_and_match_counts(
        self,
        session_id: str,
        now: float,
        targets: Sequence[Literal["messages", "summaries"]],
        operands: Sequence[str],
        cap: int,
    ) -> tuple[AccessScope, MatchCounts]:
        """One read after the other; a server backend overrides it with one statement."""
        return self.access_scope(session_id, now), self.match_counts_by_target(
            targets, operands, cap
        )

    def indexed_texts(self, targets: Sequence[Literal["messages", "summaries"]]) -> int:
        d = self._sql
        tables = [d.messages if target == "messages" else d.summaries for target in targets]
        if not tables:
            return 0
        largest = ", ".join(f"(SELECT COALESCE(MAX(id), 0) FROM {table})" for table in tables)
        return sum(self._read(f"SELECT {largest}")[0])

    def charge_grant(self, grant_id: int, tokens: int) -> None:
        d = self._sql
        with self._tx("charging a grant") as conn:
            conn.execute(
                f"UPDATE {d.grants} SET tokens_used=tokens_used+{d.p} WHERE id={d.p}",
                (tokens, grant_id),
            )

    # Health.

    def stats(self, conversation_id: int) -> dict[str, Any]:
        d = self._sql
        conv = self.conversation(conversation_id)
        (items,) = self._read(
            f"SELECT COUNT(*) FROM {d.context_items} WHERE conversation_id={d.p}",
            (conversation_id,),
        )[0]
        depth_rows = self._read(
            f"SELECT depth, COUNT(*) FROM {d.context_items} WHERE conversation_id={d.p} AND "
            "kind='summary' GROUP BY depth ORDER BY depth",
            (conversation_id,),
        )
        return stats_report(conv, items, depth_rows)
