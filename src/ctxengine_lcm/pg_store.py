"""The PostgreSQL implementation of :class:`~ctxengine_lcm.store.LcmStore`.

Same tables and rules as the SQLite store, for many processes at once: every write
locks its conversation row (``FOR UPDATE``), so appends and compaction steps of one
conversation are serialized across processes; message uids are unique per
conversation, so a retried ingest never stores a message twice. Full-text search
uses a stored ``tsvector`` column with a GIN index; the row scans behind regex
search run under ``statement_timeout``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Literal

from ctxengine_host.stores.pg import (
    DeadlineReads,
    PgTarget,
    Schema,
    Statement,
    advisory_key,
    first_line,
    open_checked,
    parse_url,
    read,
    read_many,
    transaction,
    xact_lock,
)

from .faults import fault_point
from .render import stored_digest
from .search import Operand, query_structure
from .sql import CONVERSATION_COLUMNS, MESSAGE_COLUMNS, POSTGRES, SUMMARY_COLUMNS
from .store import (
    AccessScope,
    Appended,
    Conversation,
    FulltextSearch,
    Grant,
    MatchCounts,
    NewMessage,
    SearchHit,
    StatementTimedOut,
    StoredMessage,
    StoredSummary,
)
from .store_common import (
    StoreCommon,
    appended,
    first_unseen,
    message_from_row,
)

_log = logging.getLogger("ctxengine.engine.lcm")

#: Text search configuration (stemming like the SQLite store's porter tokenizer).
TS_CONFIG = "english"
#: Longest prefix of a text that is indexed (tsvector values are capped at 1 MB).
_INDEXED_CHARS = 400_000


def _upgrade_v2(conn: Any) -> None:
    """Version 2 (#13): a message's identity is (uid, digest); each old row gets the digest
    of what it says, computed here in batches (inside the migration transaction)."""
    conn.execute("ALTER TABLE lcm_messages ADD COLUMN digest TEXT")
    last = 0
    while True:
        rows = conn.execute(
            "SELECT id, message_uid, content, extra_json FROM lcm_messages WHERE id > %s "
            "ORDER BY id LIMIT 1000",
            (last,),
        ).fetchall()
        if not rows:
            break
        conn.execute(
            "UPDATE lcm_messages m SET digest = t.digest FROM unnest(%s::bigint[], %s::text[]) "
            "AS t(id, digest) WHERE m.id = t.id",
            ([r[0] for r in rows], [stored_digest(r[1], r[2], r[3]) for r in rows]),
        )
        last = rows[-1][0]
    conn.execute(
        "ALTER TABLE lcm_messages ALTER COLUMN digest SET NOT NULL, "
        "DROP CONSTRAINT lcm_messages_conversation_id_message_uid_key, "
        "ADD CONSTRAINT lcm_messages_version UNIQUE (conversation_id, message_uid, digest)"
    )


#: Characters PostgreSQL's parser keeps inside one token (a path ``legacy/SZHY_3.cfg``, a
#: host, an address, a version number), so a fragment of it is no lexeme of its own. Texts
#: and queries both read them as spaces, as SQLite's unicode61 tokenizer does: every part
#: is found, and the whole as all of its parts.
TOKEN_JOINERS = "/\\.@:~"
_JOINER_SPACES = " " * len(TOKEN_JOINERS)
_SPLIT_JOINERS = str.maketrans(TOKEN_JOINERS, _JOINER_SPACES)


def _indexed_text_sql(column: str) -> str:
    return (
        f"to_tsvector('{TS_CONFIG}', translate(left({column}, {_INDEXED_CHARS}), "
        f"'{TOKEN_JOINERS}', '{_JOINER_SPACES}'))"
    )


def _reindex_step(table: str) -> str:
    """Version 3: the tsvector of ``table`` split at :data:`TOKEN_JOINERS` (the column is
    regenerated from the stored text; nothing else changes)."""
    return f"""
        ALTER TABLE {table} DROP COLUMN tsv;
        ALTER TABLE {table} ADD COLUMN tsv tsvector
            GENERATED ALWAYS AS ({_indexed_text_sql("content")}) STORED;
        ALTER TABLE {table} ALTER COLUMN tsv SET STORAGE MAIN;
        CREATE INDEX {table}_tsv ON {table} USING GIN(tsv) WITH (fastupdate = off);
        DO $$ BEGIN
            EXECUTE 'ALTER TABLE {table} ALTER COLUMN tsv SET COMPRESSION lz4';
        EXCEPTION WHEN OTHERS THEN NULL;
        END $$;
    """


LCM_SCHEMA = Schema(
    "lcm",
    (
        f"""
        CREATE TABLE lcm_conversations(
            id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            session_id TEXT NOT NULL,
            generation INTEGER NOT NULL,
            is_current BOOLEAN NOT NULL DEFAULT TRUE,
            created_at DOUBLE PRECISION NOT NULL,
            context_tokens BIGINT NOT NULL DEFAULT 0,
            context_version BIGINT NOT NULL DEFAULT 0,
            message_count BIGINT NOT NULL DEFAULT 0,
            next_ordinal BIGINT NOT NULL DEFAULT 0,
            UNIQUE(session_id, generation)
        );
        CREATE UNIQUE INDEX lcm_conversations_current ON lcm_conversations(session_id)
            WHERE is_current;
        CREATE TABLE lcm_messages(
            id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            conversation_id BIGINT NOT NULL REFERENCES lcm_conversations(id),
            seq BIGINT NOT NULL,
            message_uid TEXT NOT NULL,
            role TEXT NOT NULL,
            content TEXT NOT NULL,
            extra_json TEXT NOT NULL,
            tool_call_id TEXT,
            tool_name TEXT,
            token_count INTEGER NOT NULL,
            context_tokens INTEGER NOT NULL,
            externalized BOOLEAN NOT NULL DEFAULT FALSE,
            created_at DOUBLE PRECISION NOT NULL,
            tsv tsvector GENERATED ALWAYS AS
                (to_tsvector('{TS_CONFIG}', left(content, {_INDEXED_CHARS}))) STORED,
            UNIQUE(conversation_id, message_uid),
            UNIQUE(conversation_id, seq)
        );
        CREATE INDEX lcm_messages_tsv ON lcm_messages USING GIN(tsv) WITH (fastupdate = off);
        CREATE TABLE lcm_summaries(
            id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            conversation_id BIGINT NOT NULL REFERENCES lcm_conversations(id),
            kind TEXT NOT NULL CHECK (kind IN ('leaf', 'condensed')),
            depth INTEGER NOT NULL,
            content TEXT NOT NULL,
            token_count INTEGER NOT NULL,
            earliest_at DOUBLE PRECISION NOT NULL,
            latest_at DOUBLE PRECISION NOT NULL,
            first_seq BIGINT NOT NULL,
            last_seq BIGINT NOT NULL,
            descendant_messages BIGINT NOT NULL,
            descendant_summaries BIGINT NOT NULL,
            source_tokens BIGINT NOT NULL,
            created_at DOUBLE PRECISION NOT NULL,
            summarizer_level INTEGER NOT NULL,
            tsv tsvector GENERATED ALWAYS AS
                (to_tsvector('{TS_CONFIG}', left(content, {_INDEXED_CHARS}))) STORED
        );
        CREATE INDEX lcm_summaries_by_conversation ON lcm_summaries(conversation_id, id);
        CREATE INDEX lcm_summaries_tsv ON lcm_summaries USING GIN(tsv) WITH (fastupdate = off);
        CREATE TABLE lcm_summary_messages(
            summary_id BIGINT NOT NULL REFERENCES lcm_summaries(id),
            ord INTEGER NOT NULL,
            message_id BIGINT NOT NULL UNIQUE REFERENCES lcm_messages(id),
            PRIMARY KEY(summary_id, ord)
        );
        CREATE TABLE lcm_summary_sources(
            summary_id BIGINT NOT NULL REFERENCES lcm_summaries(id),
            ord INTEGER NOT NULL,
            source_id BIGINT NOT NULL UNIQUE REFERENCES lcm_summaries(id),
            PRIMARY KEY(summary_id, ord)
        );
        CREATE TABLE lcm_context_items(
            conversation_id BIGINT NOT NULL REFERENCES lcm_conversations(id),
            ordinal BIGINT NOT NULL,
            kind TEXT NOT NULL CHECK (kind IN ('message', 'summary')),
            ref_id BIGINT NOT NULL,
            token_count INTEGER NOT NULL,
            depth INTEGER NOT NULL,
            role TEXT NOT NULL,
            PRIMARY KEY(conversation_id, ordinal)
        );
        CREATE TABLE lcm_grants(
            id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            child_session_id TEXT NOT NULL,
            parent_session_id TEXT NOT NULL,
            max_depth INTEGER NOT NULL,
            token_cap INTEGER NOT NULL,
            tokens_used BIGINT NOT NULL DEFAULT 0,
            expires_at DOUBLE PRECISION,
            created_at DOUBLE PRECISION NOT NULL
        );
        CREATE INDEX lcm_grants_by_child ON lcm_grants(child_session_id);
        -- Ranking reads every candidate's tsvector: keep it in the row (compressed), not in
        -- TOAST; lz4 where the server has it (PostgreSQL 14+), pglz otherwise.
        ALTER TABLE lcm_messages ALTER COLUMN tsv SET STORAGE MAIN;
        ALTER TABLE lcm_summaries ALTER COLUMN tsv SET STORAGE MAIN;
        DO $$ BEGIN
            EXECUTE 'ALTER TABLE lcm_messages ALTER COLUMN tsv SET COMPRESSION lz4';
            EXECUTE 'ALTER TABLE lcm_summaries ALTER COLUMN tsv SET COMPRESSION lz4';
        EXCEPTION WHEN OTHERS THEN NULL;
        END $$;
        """,
        _upgrade_v2,  # 2: message identity (uid, digest)
        _reindex_step("lcm_messages") + _reindex_step("lcm_summaries"),  # 3: path fragments
    ),
)


def _longer_than(column: str, chars: int) -> str:
    """SQL true where ``column`` holds more than ``chars`` characters. Its size in bytes
    is read from the value's header; the characters are counted (a pass over the text:
    ~3 µs for 600 of them) only where the bytes are more than ``chars``."""
    return f"(octet_length({column}) > {int(chars)} AND length({column}) > {int(chars)})"


#: A table is analyzed once more rows than this share of it (and the base) changed
#: since its last analysis (autovacuum's defaults, ``autovacuum_analyze_*``).
_ANALYZE_SCALE = 0.1
_ANALYZE_BASE_ROWS = 50

#: The search target each table holds.
_TARGETS: dict[str, Literal["messages", "summaries"]] = {
    "lcm_messages": "messages",
    "lcm_summaries": "summaries",
}
#: Newest matches gathered for a recency search (at least ``limit``).
_RECENT_CAP = 200
_HEADLINE = "StartSel='',StopSel='',MaxWords=48,MinWords=16,MaxFragments=1,FragmentDelimiter=…"


def ts_query_sql(fts_query: str) -> tuple[str, list[str]]:
    """The tsquery SQL for a query built by :func:`ctxengine_lcm.search.fts_query`, with
    the same meaning: OR of AND of NOT, as FTS5 reads it (user text is a parameter, never
    SQL or tsquery syntax).

    A word that the parser splits into several lexemes (``secret-13965``, ``user_id``)
    needs all of them, in any position: a tsvector keeps only the first 255 positions of
    a lexeme and none past word 16,383, so a phrase query would miss such a word deep in
    a long text. Only a quoted phrase of several words stays a phrase (``<->``).
    """
    params: list[str] = []

    def operand(term: Operand) -> str:
        text = term.text.translate(_SPLIT_JOINERS)  # as the texts were indexed
        if term.prefix:
            params.append("'" + text.replace("\\", "\\\\").replace("'", "''") + "':*")
            # to_tsquery joins a split word's lexemes with <->; all of them are wanted.
            return (
                f"regexp_replace(to_tsquery('{TS_CONFIG}', %s)::text, "
                "' <(-|[0-9]+)> ', ' & ', 'g')::tsquery"
            )
        params.append(text)
        phrase = len(term.text.split()) > 1
        return f"{'phraseto_tsquery' if phrase else 'plainto_tsquery'}('{TS_CONFIG}', %s)"

    alternatives = []
    for conjunction in query_structure(fts_query):
        chains = []
        for first, *excluded in conjunction:
            chains.append(" && ".join([operand(first), *(f"!!({operand(t)})" for t in excluded)]))
        alternatives.append(" && ".join(f"({c})" for c in chains))
    return "(" + " || ".join(f"({a})" for a in alternatives) + ")", params


def _search_hits(rows: list[tuple], target: Literal["messages", "summaries"]) -> list[SearchHit]:
    """The hits of a search's rows (:meth:`PgLcmStore._search_statement`)."""
    kind: Literal["message", "summary"] = "message" if target == "messages" else "summary"
    return [
        SearchHit(  # type: ignore[misc, call-arg]  # mypy cannot count the splat
            kind,
            *r[:7],
            float(r[7]),
            lineage=kind == "message",
            covered_by=r[8],
            tool_call=r[9],
        )
        for r in rows
    ]


#: A session's read scope: its conversations, and each active grant (one row with no
#: grant when there is none) with the conversations of its parent session.
_ACCESS_SCOPE = (
    "SELECT ARRAY(SELECT id FROM lcm_conversations WHERE session_id=%s ORDER BY id DESC) "
    "AS own, g.id AS grant_id, g.child_session_id, g.parent_session_id, g.max_depth, "
    "g.token_cap, g.tokens_used, g.expires_at, ARRAY(SELECT c.id FROM lcm_conversations c "
    "WHERE c.session_id = g.parent_session_id ORDER BY c.id DESC) AS granted "
    "FROM (SELECT 1) AS one LEFT JOIN lcm_grants g ON g.child_session_id=%s "
    "AND (g.expires_at IS NULL OR g.expires_at > %s)"
)
_ACCESS_SCOPE_COLUMNS = 9


def _access_scope(rows: list[tuple]) -> AccessScope:
    """The session's conversations and active grants from :data:`_ACCESS_SCOPE`'s rows."""
    grants = [
        Grant(*r[1:8], conversation_ids=list(r[8]))  # type: ignore[misc]  # a splat
        for r in rows
        if r[1] is not None
    ]
    return list(rows[0][0]), grants


def _counts_by_target(
    row: Sequence[Any], names: Sequence[Literal["messages", "summaries"]]
) -> MatchCounts:
    """Each operand's counts by target from a row of counts (one per target in turn)."""
    return [
        dict(zip(names, map(int, row[i : i + len(names)]), strict=True))
        for i in range(0, len(row), len(names))
    ]


class PgLcmStore(StoreCommon):
    """An LCM history in PostgreSQL, shared by every host process of a deployment."""

    _sql = POSTGRES

    def __init__(self, url: str, statement_timeout_seconds: float = 2.0) -> None:
        self.target: PgTarget = parse_url(url)
        self.path = self.target.label
        self._scan_timeout_ms = max(1, int(statement_timeout_seconds * 1000))
        self._pool = open_checked(self.target, LCM_SCHEMA)
        #: The calling thread's reads under a deadline (:meth:`read_deadline`), if any.
        self._deadline = threading.local()

    def close(self) -> None:
        """Nothing to release: connections belong to the process's shared pool."""

    def _tx(self, what: str) -> Any:
        return transaction(self._pool, self.target, f"LCM store: {what}")

    def _read(self, sql: str, params: Sequence[Any] = (), what: str = "reading") -> list[tuple]:
        return self._read_many([(sql, params)], what)[0]

    def _read_many(self, statements: Sequence[Statement], what: str) -> list[list[tuple]]:
        """The rows of each statement, sent together (one round trip)."""
        reads = self._deadline_reads()
        if reads is not None:
            return self._read_by(reads, what, statements)
        return read_many(self._pool, self.target, f"LCM store: {what}", statements)

    @contextmanager
    def read_deadline(self, deadline: float | None) -> Iterator[None]:
        """The calling thread's reads run on one connection whose statement is cancelled
        at the deadline (:class:`~ctxengine_host.stores.pg.DeadlineReads`; None: as
        without a deadline); an enclosing block's applies again after it."""
        enclosing = self._deadline_reads()
        reads = None if deadline is None else DeadlineReads(self._pool, self.target, deadline)
        self._deadline.reads = reads
        try:
            yield
        finally:
            self._deadline.reads = enclosing
            if reads is not None:
                reads.close()

    def _deadline_reads(self) -> DeadlineReads | None:
        """The calling thread's reads under a deadline, if it set one."""
        return getattr(self._deadline, "reads", None)

    def _read_by(
        self, reads: DeadlineReads, what: str, statements: Sequence[Statement]
    ) -> list[list[tuple]]:
        """Reads under the thread's deadline: not sent once it has passed, cancelled by
        the server when they run past it."""
        import psycopg

        if reads.seconds_left() <= 0:
            raise StatementTimedOut(f"{self.path}: the deadline passed before {what}")
        try:
            return reads.read_many(f"LCM store: {what}", statements)
        except psycopg.errors.QueryCanceled as exc:
            raise StatementTimedOut(f"{self.path}: {what} ran past its deadline") from exc

    # Conversations.

    def current_conversation(self, session_id: str) -> Conversation:
        sql = (
            f"SELECT {CONVERSATION_COLUMNS} FROM lcm_conversations "
            "WHERE session_id=%s AND is_current"
        )
        rows = self._read(sql, (session_id,))
        if rows:
            return Conversation(*rows[0])
        with self._tx("creating a conversation") as conn:
            xact_lock(conn, advisory_key(self.target.namespace, "lcm-session", session_id))
            row = conn.execute(sql, (session_id,)).fetchone()
            if row is not None:
                return Conversation(*row)
            return self._insert_conversation(conn, session_id)

    def start_new_conversation(self, session_id: str) -> Conversation:
        with self._tx("starting a conversation") as conn:
            xact_lock(conn, advisory_key(self.target.namespace, "lcm-session", session_id))
            conn.execute(
                "UPDATE lcm_conversations SET is_current=FALSE WHERE session_id=%s AND is_current",
                (session_id,),
            )
            return self._insert_conversation(conn, session_id)

    def _insert_conversation(self, conn: Any, session_id: str) -> Conversation:
        row = conn.execute(
            "INSERT INTO lcm_conversations(session_id, generation, created_at) "
            "SELECT %s, COALESCE(MAX(generation), -1) + 1, %s FROM lcm_conversations "
            f"WHERE session_id=%s RETURNING {CONVERSATION_COLUMNS}",
            (session_id, time.time(), session_id),
        ).fetchone()
        return Conversation(*row)

    # Messages.

    @staticmethod
    def _counters_and_fresh(
        conn: Any, conversation_id: int, messages: Sequence[NewMessage]
    ) -> tuple[int, int, list[NewMessage]]:
        """(message count, next ordinal), the conversation row locked until commit, and
        ``messages`` whose versions are not stored yet (first of repeats kept): one round
        trip."""
        count, next_ordinal, uids, digests = conn.execute(
            "SELECT c.message_count, c.next_ordinal, known.uids, known.digests "
            "FROM lcm_conversations c CROSS JOIN LATERAL (SELECT array_agg(m.message_uid) "
            "AS uids, array_agg(m.digest) AS digests FROM lcm_messages m "
            "WHERE m.conversation_id = c.id AND m.message_uid = ANY(%s)) known "
            "WHERE c.id = %s FOR UPDATE OF c",
            ([m.message_uid for m in messages], conversation_id),
        ).fetchone()
        seen = set(zip(uids or (), digests or (), strict=True))
        return count, next_ordinal, first_unseen(messages, seen)

    @staticmethod
    def _link_sources(
        conn: Any, table: str, column: str, summary_id: int, refs: Sequence[int]
    ) -> None:
        """A new summary's lineage rows: what it summarizes, in order, in one statement."""
        conn.execute(
            f"INSERT INTO {table}(summary_id, ord, {column}) "
            "SELECT %s, n - 1, ref FROM unnest(%s::bigint[]) WITH ORDINALITY AS t(ref, n)",
            (summary_id, list(refs)),
        )

    def _insert_rows(
        self,
        conn: Any,
        conversation_id: int,
        fresh: list[NewMessage],
        first_seq: int,
        first_ordinal: int,
    ) -> Appended:
        """Rows and context items for ``fresh`` at free seq/ordinal slots, counters updated:
        one statement, so one round trip (each is a wait for the server). The crash point
        comes before it, inside the transaction: on this backend a statement is never half
        done, so that is the deepest point a batch can be cut."""
        fault_point("lcm.ingest.mid_batch")
        columns = [list(c) for c in zip(*[m.columns() for m in fresh], strict=True)]
        rows = conn.execute(
            "WITH stored AS (INSERT INTO lcm_messages(conversation_id, seq, message_uid, role, "
            "content, extra_json, tool_call_id, tool_name, token_count, context_tokens, "
            "externalized, created_at, digest) SELECT %s, %s + n - 1, uid, role, content, "
            "extra, call_id, tool, tok, ctx, ext, at, dig FROM unnest(%s::text[], %s::text[], "
            "%s::text[], %s::text[], %s::text[], %s::text[], %s::int[], %s::int[], %s::bool[], "
            "%s::float8[], %s::text[]) WITH ORDINALITY "
            "AS t(uid, role, content, extra, call_id, tool, tok, ctx, ext, at, dig, n) "
            "RETURNING id, seq, context_tokens, role), "
            "items AS (INSERT INTO lcm_context_items(conversation_id, ordinal, kind, ref_id, "
            "token_count, depth, role) SELECT %s, %s + seq - %s, 'message', id, "
            "context_tokens, -1, role FROM stored RETURNING ordinal, ref_id), "
            "counters AS (UPDATE lcm_conversations SET message_count=message_count+%s, "
            "next_ordinal=next_ordinal+%s, context_tokens=context_tokens+%s, "
            "context_version=context_version+1 WHERE id=%s RETURNING context_version) "
            "SELECT items.ordinal, items.ref_id, counters.context_version "
            "FROM items CROSS JOIN counters",
            (
                conversation_id, first_seq, *columns,
                conversation_id, first_ordinal, first_seq,
                len(fresh), len(fresh), sum(m.context_tokens for m in fresh), conversation_id,
            ),
        ).fetchall()  # fmt: skip
        items = [(ordinal, ref) for ordinal, ref, _ in rows]
        return appended(conversation_id, fresh, first_seq, items, rows[0][2])

    def messages_by_id(self, ids: Iterable[int]) -> dict[int, StoredMessage]:
        ids = list(ids)
        if not ids:
            return {}
        rows = self._read(f"SELECT {MESSAGE_COLUMNS} FROM lcm_messages WHERE id = ANY(%s)", (ids,))
        return {r[0]: message_from_row(r) for r in rows}

    def message_by_uid(
        self, conversation_ids: Sequence[int], message_uid: str
    ) -> StoredMessage | None:
        rows = self._read(
            f"SELECT {MESSAGE_COLUMNS} FROM lcm_messages WHERE conversation_id = ANY(%s) AND "
            "message_uid=%s ORDER BY conversation_id DESC, seq DESC LIMIT 1",
            (list(conversation_ids), message_uid),
        )
        return message_from_row(rows[0]) if rows else None

    # Summaries and lineage.

    def summaries_by_id(self, ids: Iterable[int]) -> dict[int, StoredSummary]:
        ids = list(ids)
        if not ids:
            return {}
        rows = self._read(f"SELECT {SUMMARY_COLUMNS} FROM lcm_summaries WHERE id = ANY(%s)", (ids,))
        return {r[0]: StoredSummary(*r) for r in rows}

    def parent_summaries_of_messages(self, message_ids: Iterable[int]) -> dict[int, int]:
        ids = list(message_ids)
        if not ids:
            return {}
        rows = self._read(
            "SELECT message_id, summary_id FROM lcm_summary_messages WHERE message_id = ANY(%s)",
            (ids,),
        )
        return {r[0]: r[1] for r in rows}

    # Search.

    @staticmethod
    def _conversations_clause(column: str, ids: Sequence[int]) -> tuple[str, list[Any]]:
        return f"{column} = ANY(%s)", [list(ids)]

    def search_fulltext(
        self,
        conversation_ids: Sequence[int],
        fts_query: str,
        target: Literal["messages", "summaries"],
        since: float | None,
        until: float | None,
        limit: int,
        by_relevance: bool,
        relevance_window: int | None,
        whole_chars: int = 1000,
        preview_chars: int | None = None,
        all_terms: str | None = None,
    ) -> list[SearchHit]:
        """Matches newest first, or ranked among the newest ``relevance_window`` matches
        (None: every match, ``LIMIT NULL``) together with the newest ``limit`` matches of
        ``all_terms`` (every term required: usually rare, so it reaches back through the
        whole history cheaply; where every word is common, the newest pool's worth);
        long texts as a headline, or as their first ``preview_chars`` characters when given
        (``ts_headline`` parses the whole text: ask :meth:`snippets` for the hits shown).

        The newest matches are gathered first (a materialized step planned for all its
        rows): the planner then walks the primary key backwards for a frequent term and
        uses the GIN index for a rare one, instead of betting on the limit.
        """
        if not conversation_ids:
            return []
        search = FulltextSearch(
            conversation_ids, fts_query, target, since, until, limit, by_relevance,
            relevance_window, whole_chars, preview_chars, all_terms,
        )  # fmt: skip
        return self.search_fulltext_many([search])[0]

    def search_fulltext_many(self, searches: Sequence[FulltextSearch]) -> list[list[SearchHit]]:
        """The searches in one round trip (pipeline mode): a grep's messages and summaries
        searches of one expression cost one wait for the server, not two."""
        asked = [self._search_statement(s) for s in searches if s.conversation_ids]
        found = iter(self._read_many(asked, "full-text search") if asked else [])
        return [_search_hits(next(found), s.target) if s.conversation_ids else [] for s in searches]

    def _search_statement(self, search: FulltextSearch) -> Statement:
        """The SQL of one search (:meth:`search_fulltext`) and its parameters."""
        (conversation_ids, fts_query, target, since, until, limit, by_relevance,
         relevance_window, whole_chars, preview_chars, all_terms) = search  # fmt: skip
        alias, table = ("m", "lcm_messages") if target == "messages" else ("s", "lcm_summaries")
        scope, scope_params = self._scope_sql(alias, conversation_ids, since, until)
        query_sql, phrases = ts_query_sql(fts_query)
        extra = "m.role, m.seq, -1" if target == "messages" else "'', s.first_seq, s.depth"
        call = "m.tool_name IS NOT NULL" if target == "messages" else "NULL::boolean"
        time_column = "created_at" if target == "messages" else "latest_at"
        cap = relevance_window if by_relevance else max(limit, _RECENT_CAP)
        order = "rank DESC, id DESC" if by_relevance else "id DESC"
        final = f"top.rank DESC, {alias}.id DESC" if by_relevance else f"{alias}.id DESC"
        if preview_chars is not None:
            long_text, long_params = f"left({alias}.content, {int(preview_chars)})", []
        else:
            long_text = f"ts_headline('{TS_CONFIG}', {alias}.content, {query_sql}, %s)"
            long_params = [*phrases, _HEADLINE]
        # A message hit's covering summary comes with it: no look-up per hit afterwards.
        lineage, lineage_join = (
            ("sm.summary_id", "LEFT JOIN lcm_summary_messages sm ON sm.message_id = m.id")
            if target == "messages"
            else ("NULL::bigint", "")
        )
        pool, pool_params = "hits", []
        if by_relevance and all_terms:  # holding every word: in the pool whatever its rank
            every_sql, every_phrases = ts_query_sql(all_terms)
            pool = (
                f"(SELECT id, max(rank) AS rank, max(every) AS every FROM (SELECT id, rank, "
                f"0 AS every FROM hits UNION ALL (SELECT {alias}.id, ts_rank({alias}.tsv, "
                f"{query_sql}), 1 FROM {table} {alias} WHERE {alias}.tsv @@ {every_sql} "
                f"AND {scope} ORDER BY 1 DESC LIMIT %s)) candidates GROUP BY id) pool"
            )
            pool_params = [*phrases, *every_phrases, *scope_params, limit]
            order = f"every DESC, {order}"
        sql = (
            f"WITH hits AS MATERIALIZED (SELECT {alias}.id, ts_rank({alias}.tsv, "
            f"{query_sql}) AS rank FROM {table} {alias} WHERE {alias}.tsv @@ {query_sql} "
            f"AND {scope} ORDER BY {alias}.id DESC LIMIT %s), "
            f"top AS (SELECT id, rank FROM {pool} ORDER BY {order} LIMIT %s) "
            f"SELECT {alias}.id, {alias}.conversation_id, {alias}.{time_column}, "
            f"CASE WHEN {_longer_than(f'{alias}.content', whole_chars)} THEN {long_text} "
            f"ELSE {alias}.content END, {extra}, "
            f"-top.rank, {lineage}, {call} FROM top JOIN {table} {alias} ON {alias}.id = top.id "
            f"{lineage_join} ORDER BY {final}"
        )
        params = [*phrases, *phrases, *scope_params, cap, *pool_params, limit, *long_params]
        return sql, params

    def match_counts_by_target(
        self, targets: Sequence[Literal["messages", "summaries"]], operands: Sequence[str], cap: int
    ) -> MatchCounts:
        """How many texts of every session in each of ``targets`` match each of
        ``operands``, counted up to ``cap`` all targets together (one statement).

        Summaries are counted first: few, and restating the messages, they often hold a
        common term ``cap`` times already, and its messages are then not read at all
        (counted as 0). Messages count their newest matches: for a frequent term the
        planner then walks the primary key backwards through pages the searches keep
        cached, where its sequential scan of a table this size reads the oldest pages
        through a small ring of buffers on every count (0.4-0.6 ms instead of 0.8-8 ms for
        a word in one message of ten, at 100,000 messages). Summaries are wide: the GIN
        bitmap counts them faster than a walk reading each one's tsvector.
        """
        if not operands or not targets:
            return []
        counts, columns, params, names = self._counts_sql(targets, operands, cap)
        row = self._read(
            f"WITH {counts} SELECT {columns} FROM firsts",
            [*params[0], *params[1]],
            "full-text search",
        )[0]
        return _counts_by_target(row, names)

    @staticmethod
    def _counts_sql(
        targets: Sequence[Literal["messages", "summaries"]], operands: Sequence[str], cap: int
    ) -> tuple[str, str, tuple[list[Any], list[Any]], list[Literal["messages", "summaries"]]]:
        """The counts of :meth:`match_counts_by_target` as SQL: the ``firsts`` CTE (the
        first target's counts), the columns read from it (every target's count for each
        operand in turn), the parameters of each, and the target of each column."""
        tables = sorted({"lcm_messages" if t == "messages" else "lcm_summaries" for t in targets})
        first, *rest = tables[::-1]  # summaries, then messages

        def count(table: str, query_sql: str, limit: str) -> str:
            newest = "ORDER BY id DESC " if table == "lcm_messages" else ""
            return (
                f"(SELECT count(*) FROM (SELECT 1 FROM {table} WHERE tsv @@ {query_sql} "
                f"{newest}LIMIT {limit}) c)"
            )

        queries = [ts_query_sql(operand) for operand in operands]
        firsts = ", ".join(
            f"{count(first, query_sql, '%s')} AS n{i}" for i, (query_sql, _) in enumerate(queries)
        )
        first_params: list[Any] = [value for _, phrases in queries for value in (*phrases, cap)]
        columns: list[str] = []
        column_params: list[Any] = []
        for i, (query_sql, phrases) in enumerate(queries):
            # A limit the planner can read (a computed one it takes for a tenth of the
            # matches, and walks the primary key past a rare term's few); CASE runs the
            # count only when the summaries left room.
            columns += [f"n{i}"] + [
                f"CASE WHEN n{i} >= %s THEN 0 ELSE {count(t, query_sql, '%s')} END" for t in rest
            ]
            column_params += [value for _ in rest for value in (cap, *phrases, cap)]
        names = [_TARGETS[table] for table in (first, *rest)]
        cte = f"firsts AS MATERIALIZED (SELECT {firsts})"
        return cte, ", ".join(columns), (first_params, column_params), names

    def snippets(
        self,
        target: Literal["messages", "summaries"],
        fts_query: str,
        ids: Sequence[int],
        whole_chars: int,
    ) -> dict[int, str]:
        """The headline of each of ``ids`` longer than ``whole_chars``."""
        if not ids:
            return {}
        table = "lcm_messages" if target == "messages" else "lcm_summaries"
        query_sql, phrases = ts_query_sql(fts_query)
        sql = (
            f"SELECT id, ts_headline('{TS_CONFIG}', content, {query_sql}, %s) FROM {table} "
            f"WHERE id = ANY(%s) AND {_longer_than('content', whole_chars)}"
        )
        rows = self._read(sql, [*phrases, _HEADLINE, list(ids)], "full-text search")
        return {row[0]: row[1] for row in rows}

    def search_within_summaries(
        self, summary_ids: Sequence[int], fts_query: str, limit: int, whole_chars: int
    ) -> dict[int, list[SearchHit]]:
        """The matching messages of each summary's span, by ``ts_rank``, in one statement
        (the spans are read in it: a round trip for them and one per summary cost more
        than the searches at 100,000 messages).

        The match is tested with ``ts_match_vq`` (what ``@@`` calls), which no index
        answers: a span is a few hundred messages found by the index on their sequence
        numbers, and the planner, which cannot see a span's size, would otherwise
        intersect them with a common term's whole GIN entry list (3.3 ms instead of
        0.3 ms per span at 100,000 messages).
        """
        if not summary_ids:
            return {}
        query_sql, phrases = ts_query_sql(fts_query)
        rows = self._read(
            f"SELECT s.id, h.* FROM lcm_summaries s CROSS JOIN (SELECT {query_sql} AS q) q "
            "LEFT JOIN LATERAL (SELECT m.id, m.conversation_id, m.created_at, "
            f"CASE WHEN {_longer_than('m.content', whole_chars)} "
            f"THEN ts_headline('{TS_CONFIG}', m.content, q.q, %s) ELSE m.content END, "
            "m.role, m.seq, "
            "-ts_rank(m.tsv, q.q) AS score FROM lcm_messages m "
            "WHERE m.conversation_id = s.conversation_id "
            "AND m.seq BETWEEN s.first_seq AND s.last_seq AND ts_match_vq(m.tsv, q.q) "
            "ORDER BY score, m.seq DESC LIMIT %s) h ON TRUE WHERE s.id = ANY(%s) "
            "ORDER BY s.id, h.score, h.seq DESC",
            [*phrases, _HEADLINE, limit, list(summary_ids)],
            "full-text search",
        )
        found: dict[int, list[SearchHit]] = {}
        for r in rows:
            hits = found.setdefault(r[0], [])
            if r[1] is not None:  # a summary without a match has one row of nulls
                hits.append(
                    SearchHit("message", r[1], r[2], r[3], r[4], r[5], r[6], -1, float(r[7]))
                )
        return found

    def _scan_page(self, sql: str, params: Sequence[Any]) -> list[tuple] | None:
        """One page under ``statement_timeout``; None when the server could not serve it in
        time: the scan ends early instead of holding a connection. Under a read deadline,
        a read like the others (capped by the deadline)."""
        import psycopg

        if self._deadline_reads() is not None:
            return self._read(sql, params, "scanning for a regex")
        try:
            with self._tx("scanning for a regex") as conn:
                conn.execute(f"SET LOCAL statement_timeout = {self._scan_timeout_ms}")
                return conn.execute(sql, params).fetchall()
        except psycopg.errors.QueryCanceled:
            return None

    # Sub-agent grants.

    def revoke_grants(self, child_session_id: str, grant_id: int | None = None) -> int:
        with self._tx("revoking grants") as conn:
            cur = conn.execute(
                "DELETE FROM lcm_grants WHERE child_session_id=%s AND (%s::bigint IS NULL "
                "OR id=%s)",
                (child_session_id, grant_id, grant_id),
            )
            return cur.rowcount

    def access_scope(self, session_id: str, now: float) -> AccessScope:
        """One statement: the session's conversations, and each active grant with the
        conversations of its parent session (one row with no grant when there is none)."""
        rows = self._read(f"{_ACCESS_SCOPE} ORDER BY grant_id", (session_id, session_id, now))
        return _access_scope(rows)

    def access_scope_and_match_counts(
        self,
        session_id: str,
        now: float,
        targets: Sequence[Literal["messages", "summaries"]],
        operands: Sequence[str],
        cap: int,
    ) -> tuple[AccessScope, MatchCounts]:
        """:meth:`access_scope` and :meth:`match_counts_by_target` in one statement (a
        grep's first read: the scope alone was a statement and a round trip of its own).
        Every row of the scope carries the counts."""
        if not operands or not targets:
            return self.access_scope(session_id, now), []
        counts, columns, params, names = self._counts_sql(targets, operands, cap)
        rows = self._read(
            f"WITH {counts} SELECT scope.*, counts.* FROM ({_ACCESS_SCOPE}) scope "
            f"CROSS JOIN (SELECT {columns} FROM firsts) counts ORDER BY scope.grant_id",
            [*params[0], session_id, session_id, now, *params[1]],
            "full-text search",
        )
        return _access_scope(rows), _counts_by_target(rows[0][_ACCESS_SCOPE_COLUMNS:], names)

    # Upkeep.

    def tidy_search_index(self) -> None:
        """Keep the planner's statistics of the LCM tables current (a GIN index has no
        segments to merge): ANALYZE each table whose rows changed by more than a tenth
        (and 50) since it was last analyzed, autovacuum's own rule, which a server with
        autovacuum off never applies.

        Without statistics the planner takes a conversation for a small share of the
        table and intersects the whole (conversation, seq) index with a rare term's
        matches: ``lcm_grep`` at 100,000 messages of one conversation took 6.5 ms
        instead of 3.8. One statement per compaction finds the stale tables; analyzing
        100,000 messages takes ~0.2 s, once per tenth of growth. A table another session
        is analyzing is skipped; where the server refuses, autovacuum is left to it.
        """
        import psycopg

        stale = read(  # upkeep, like the writes: never under a grep's read deadline
            self._pool,
            self.target,
            "LCM store: checking the planner's statistics",
            "SELECT relname FROM pg_stat_user_tables WHERE schemaname = current_schema() "
            "AND relname LIKE 'lcm\\_%%' AND n_mod_since_analyze > "
            f"{_ANALYZE_BASE_ROWS} + {_ANALYZE_SCALE} * n_live_tup",
        )
        if not stale:
            return
        try:
            with self._pool.connection() as conn:
                for (table,) in stale:
                    conn.execute(f'ANALYZE (SKIP_LOCKED) "{table}"')
        except psycopg.Error as exc:  # upkeep: the compaction it follows is done
            _log.warning("%s: ANALYZE failed (%s); the statistics wait for autovacuum",
                         self.path, first_line(exc))  # fmt: skip

    # Health.

    def size_bytes(self) -> int:
        (total,) = self._read(
            "SELECT COALESCE(SUM(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE c.relkind = 'r' AND c.relname LIKE 'lcm\\_%%' AND n.nspname = current_schema()"
        )[0]
        return int(total)

    def integrity_check(self) -> str:
        """``ok``, or what is wrong: context items pointing at rows that do not exist."""
        (dangling,) = self._read(
            "SELECT COUNT(*) FROM lcm_context_items ci WHERE NOT EXISTS ("
            "SELECT 1 FROM lcm_messages m WHERE ci.kind='message' AND m.id=ci.ref_id "
            "UNION ALL SELECT 1 FROM lcm_summaries s WHERE ci.kind='summary' AND s.id=ci.ref_id)"
        )[0]
        return "ok" if dangling == 0 else f"{dangling} context item(s) reference missing rows"
