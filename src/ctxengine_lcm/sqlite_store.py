"""The SQLite implementation of :class:`~ctxengine_lcm.store.LcmStore`.

One file in WAL mode; each engine clone holds one connection guarded by a lock, so any
pool thread may call it. Writes run in ``BEGIN IMMEDIATE`` transactions: a compaction
step (summary row, lineage links, the context items it replaces, the running totals)
commits as one unit. Nothing here scans a conversation's whole history: the active
context, lineage and search all go through indexes.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

from ctxengine_host.stores.sqlite_schema import (
    SchemaTooNew,
    SqliteSchema,
    checkpoint_every,
    enable_wal,
    upgrade,
)

from .faults import fault_point
from .render import stored_digest
from .search import query_operands
from .sql import CONVERSATION_COLUMNS, MESSAGE_COLUMNS, SQLITE, SUMMARY_COLUMNS
from .store import (
    Appended,
    Conversation,
    FulltextSearch,
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

#: Longest prefix of a message that is indexed for full-text search (as on PostgreSQL):
#: indexing costs time per character, and one 50 MB tool output would hold the ingest
#: transaction for seconds. Regex search still reads whole texts.
INDEXED_CHARS = 400_000
#: Version 1's delete trigger (kept as it was: version 4 replaces it).
_V1_DELETE_TRIGGER = f"""
CREATE TRIGGER IF NOT EXISTS messages_fts_delete AFTER DELETE ON messages BEGIN
    INSERT INTO messages_fts(messages_fts, rowid, content)
        VALUES ('delete', old.id, substr(old.content, 1, {INDEXED_CHARS}));
END;
"""
#: The ``meta`` key holding the largest message id whose row is in ``messages_fts``. Rows
#: above it are pending: stored, not indexed yet (:meth:`SqliteStore._index_pending`).
_INDEXED_THROUGH_KEY = "fts_indexed_through"
#: That mark, as an SQL expression.
_MARK = f"(SELECT CAST(value AS INTEGER) FROM meta WHERE key = '{_INDEXED_THROUGH_KEY}')"
#: Pending messages at which an append indexes them all, in its own transaction. Each
#: commit that indexes anything writes a new FTS5 segment and merges (~125 µs for a
#: one-message turn, ~60% of its append); a batch of 32 costs about as much as one
#: message, and searches index whatever is pending first (docs/performance.md, "LCM
#: ingest"). A bulk append of more messages indexes at once, as before.
FTS_BATCH_MESSAGES = 32
#: Whether any message is pending (a read: no write lock when none is).
_ANY_PENDING = f"SELECT (SELECT max(id) FROM messages) > {_MARK}"
#: The newest message id left, 0 when there is none.
_TOP_ID = "(SELECT coalesce(max(id), 0) FROM messages)"


def _delete_trigger(indexed: str) -> str:
    """The delete trigger for messages indexed as ``indexed`` (an expression of ``old``):
    it removes exactly what was indexed, and only for an indexed row (an FTS5 'delete'
    of a row that was never inserted corrupts an external-content index). A deleted
    newest row lowers the mark to the newest row left: SQLite gives its id to the next
    row inserted, which must count as pending."""
    return f"""
CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN
    INSERT INTO messages_fts(messages_fts, rowid, content)
        SELECT 'delete', old.id, {indexed} WHERE old.id <= {_MARK};
    UPDATE meta SET value = {_TOP_ID}
        WHERE key = '{_INDEXED_THROUGH_KEY}' AND CAST(value AS INTEGER) > {_TOP_ID};
END
"""


_SCHEMA_V1 = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS conversations(
    id INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL,
    generation INTEGER NOT NULL,
    is_current INTEGER NOT NULL DEFAULT 1,
    created_at REAL NOT NULL,
    context_tokens INTEGER NOT NULL DEFAULT 0,
    context_version INTEGER NOT NULL DEFAULT 0,
    message_count INTEGER NOT NULL DEFAULT 0,
    next_ordinal INTEGER NOT NULL DEFAULT 0,
    UNIQUE(session_id, generation)
);
CREATE TABLE IF NOT EXISTS messages(
    id INTEGER PRIMARY KEY,
    conversation_id INTEGER NOT NULL,
    seq INTEGER NOT NULL,
    message_uid TEXT NOT NULL,
    role TEXT NOT NULL,
    content TEXT NOT NULL,
    extra_json TEXT NOT NULL,
    tool_call_id TEXT,
    tool_name TEXT,
    token_count INTEGER NOT NULL,
    context_tokens INTEGER NOT NULL,
    externalized INTEGER NOT NULL DEFAULT 0,
    created_at REAL NOT NULL,
    UNIQUE(conversation_id, message_uid),
    UNIQUE(conversation_id, seq)
);
CREATE TABLE IF NOT EXISTS summaries(
    id INTEGER PRIMARY KEY,
    conversation_id INTEGER NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('leaf', 'condensed')),
    depth INTEGER NOT NULL,
    content TEXT NOT NULL,
    token_count INTEGER NOT NULL,
    earliest_at REAL NOT NULL,
    latest_at REAL NOT NULL,
    first_seq INTEGER NOT NULL,
    last_seq INTEGER NOT NULL,
    descendant_messages INTEGER NOT NULL,
    descendant_summaries INTEGER NOT NULL,
    source_tokens INTEGER NOT NULL,
    created_at REAL NOT NULL,
    summarizer_level INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS summaries_by_conversation ON summaries(conversation_id, id);
CREATE TABLE IF NOT EXISTS summary_messages(
    summary_id INTEGER NOT NULL,
    ord INTEGER NOT NULL,
    message_id INTEGER NOT NULL UNIQUE,
    PRIMARY KEY(summary_id, ord)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS summary_sources(
    summary_id INTEGER NOT NULL,
    ord INTEGER NOT NULL,
    source_id INTEGER NOT NULL UNIQUE,
    PRIMARY KEY(summary_id, ord)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS context_items(
    conversation_id INTEGER NOT NULL,
    ordinal INTEGER NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('message', 'summary')),
    ref_id INTEGER NOT NULL,
    token_count INTEGER NOT NULL,
    depth INTEGER NOT NULL,
    role TEXT NOT NULL,
    PRIMARY KEY(conversation_id, ordinal)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS grants(
    id INTEGER PRIMARY KEY,
    child_session_id TEXT NOT NULL,
    parent_session_id TEXT NOT NULL,
    max_depth INTEGER NOT NULL,
    token_cap INTEGER NOT NULL,
    tokens_used INTEGER NOT NULL DEFAULT 0,
    expires_at REAL,
    created_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS grants_by_child ON grants(child_session_id);
CREATE VIRTUAL TABLE IF NOT EXISTS messages_fts USING fts5(
    content, content='messages', content_rowid='id',
    tokenize='porter unicode61 remove_diacritics 2'
);
CREATE VIRTUAL TABLE IF NOT EXISTS summaries_fts USING fts5(
    content, content='summaries', content_rowid='id',
    tokenize='porter unicode61 remove_diacritics 2'
);
-- Up to 8 FTS5 segments per level before a merge (default 4): about half the merge work
-- during bulk ingest, for a little more work per query (measured in docs/performance.md).
INSERT INTO messages_fts(messages_fts, rank) SELECT 'automerge', 8
    WHERE NOT EXISTS (SELECT 1 FROM messages_fts_config WHERE k = 'automerge');
-- Message rows are indexed by append_messages in one set-based statement per batch.
CREATE TRIGGER IF NOT EXISTS summaries_fts_insert AFTER INSERT ON summaries BEGIN
    INSERT INTO summaries_fts(rowid, content) VALUES (new.id, new.content);
END;
CREATE TRIGGER IF NOT EXISTS summaries_fts_delete AFTER DELETE ON summaries BEGIN
    INSERT INTO summaries_fts(summaries_fts, rowid, content) VALUES ('delete', old.id, old.content);
END;
"""
_SCHEMA_V1 += _V1_DELETE_TRIGGER

#: The ``meta`` key set on a store made before prefix indexing that holds a longer
#: message: it keeps indexing whole texts, so that its delete trigger stays exact.
_WHOLE_TEXT_KEY = "fts_whole_texts"

_MESSAGES_FTS_DELETE = """
CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN
    INSERT INTO messages_fts(messages_fts, rowid, content) VALUES ('delete', old.id, old.content);
END
"""
_V1_MESSAGE_COLUMNS = MESSAGE_COLUMNS.removesuffix(", digest")


def _upgrade_v2(conn: sqlite3.Connection) -> None:
    """Version 2 (#13): a message's identity is (uid, digest). The table is rebuilt (SQLite
    cannot drop a UNIQUE constraint) with the same row ids, so the full-text index, the
    lineage and the context items stay valid; each old row gets the digest of what it says.
    The delete trigger is restored as it was (whole-text or prefix indexing)."""
    trigger = conn.execute(
        "SELECT sql FROM sqlite_master WHERE type='trigger' AND name='messages_fts_delete'"
    ).fetchone()
    conn.execute("DROP TRIGGER IF EXISTS messages_fts_delete")
    conn.execute(
        """CREATE TABLE messages_v2(
            id INTEGER PRIMARY KEY,
            conversation_id INTEGER NOT NULL,
            seq INTEGER NOT NULL,
            message_uid TEXT NOT NULL,
            role TEXT NOT NULL,
            content TEXT NOT NULL,
            extra_json TEXT NOT NULL,
            tool_call_id TEXT,
            tool_name TEXT,
            token_count INTEGER NOT NULL,
            context_tokens INTEGER NOT NULL,
            externalized INTEGER NOT NULL DEFAULT 0,
            created_at REAL NOT NULL,
            digest TEXT NOT NULL,
            UNIQUE(conversation_id, message_uid, digest),
            UNIQUE(conversation_id, seq)
        )"""
    )
    rows = conn.execute(f"SELECT {_V1_MESSAGE_COLUMNS} FROM messages ORDER BY id")
    while batch := rows.fetchmany(1000):
        conn.executemany(
            f"INSERT INTO messages_v2({MESSAGE_COLUMNS}) VALUES ({SQLITE.marks(14)})",
            [(*r, stored_digest(r[3], r[5], r[6])) for r in batch],
        )
    conn.execute("DROP TABLE messages")
    conn.execute("ALTER TABLE messages_v2 RENAME TO messages")
    conn.execute(trigger[0] if trigger else _MESSAGES_FTS_DELETE)


def _indexed_prefix(column: str) -> str:
    """The part of a message's text (``column``) that prefix indexing indexes."""
    return f"substr({column}, 1, {INDEXED_CHARS})"


#: Version 3: the optional semantic index (semantic.py), one float16 vector a message,
#: filled lazily by searches; empty while ``semantic_index`` is off.
_SCHEMA_V3 = """
CREATE TABLE message_vectors(
    conversation_id INTEGER NOT NULL,
    message_id INTEGER NOT NULL,
    created_at REAL NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY(conversation_id, message_id)
) WITHOUT ROWID;
CREATE TRIGGER message_vectors_delete AFTER DELETE ON messages BEGIN
    DELETE FROM message_vectors WHERE conversation_id = old.conversation_id
        AND message_id = old.id;
END;
"""


def _upgrade_v4(conn: sqlite3.Connection) -> None:
    """Version 4: messages are indexed in batches (:data:`FTS_BATCH_MESSAGES`). Every
    row of an older file is indexed: the mark starts at its newest message. The delete
    trigger gets the pending-row guard and keeps deleting the text it deleted before
    (whole or prefix: :meth:`SqliteStore._indexed_text_sql`)."""
    (trigger,) = conn.execute(
        "SELECT sql FROM sqlite_master WHERE type='trigger' AND name='messages_fts_delete'"
    ).fetchone()
    conn.execute(f"INSERT INTO meta(key, value) SELECT ?, {_TOP_ID}", (_INDEXED_THROUGH_KEY,))
    conn.execute("DROP TRIGGER messages_fts_delete")
    whole = "substr" not in trigger
    conn.execute(_delete_trigger("old.content" if whole else _indexed_prefix("old.content")))


#: Append a step for every change of the stored data; never edit an old one.
LCM_SQLITE_SCHEMA = SqliteSchema("lcm", (_SCHEMA_V1, _upgrade_v2, _SCHEMA_V3, _upgrade_v4))
SCHEMA_VERSION = str(LCM_SQLITE_SCHEMA.latest)

#: SQLite's page cache per connection, KiB.
PAGE_CACHE_KIB = 16_384
#: Page size of a new store file (SQLite's default is 4 KiB; a file keeps the size it was
#: made with). Rows of ~1 KB and FTS5's ~4 KB leaf blobs pack with less waste than in
#: 4 KiB pages and a bulk ingest batch writes fewer WAL frames; a turn's commit writes
#: each page it touched (~10) whole, so 16 KiB pages cost each turn more than they save
#: (docs/performance.md, "LCM ingest").
NEW_FILE_PAGE_BYTES = 8_192
#: FTS5 pages each index may write in one :meth:`SqliteStore.tidy_search_index`.
TIDY_MERGE_PAGES = 400
#: Segments of one level that a tidy-up merges (FTS5 ``usermerge``; its default is 4).
_TIDY_MERGE_SEGMENTS = 2
#: The full-text indexes a tidy-up merges.
_FULL_TEXT_INDEXES = ("messages_fts", "summaries_fts")
#: Ids per ``IN (...)`` list.
_ID_BATCH = 500
#: Relevance of a tool output relative to what the user and the assistant said (bm25
#: factor): bulky logs and listings repeat every term and would crowd out the dialogue.
TOOL_OUTPUT_WEIGHT = 0.5
#: The rows that weight applies to: tool outputs, and tool calls (their arguments are
#: indexed: paths and identifiers that repeat every term of a session).
_TOOL_WRITTEN = "(m.role = 'tool' OR (m.role = 'assistant' AND m.tool_name IS NOT NULL))"
#: Newest matches inside a summary's span that are ranked for its inner hits.
_WITHIN_CANDIDATES = 2_000
#: Tokens of a search snippet around the matches.
_SNIPPET_TOKENS = 48


#: SQLite VM instructions between two checks of a read deadline (:meth:`SqliteStore.read_deadline`).
#: A check (a Python call) costs about 20-40 instructions: every 10,000 a long statement
#: takes 0.7% more CPU (every 100: 22%; a 3,000,000-row counting loop), and stops within
#: ~0.2 ms of the deadline.
DEADLINE_CHECK_INSTRUCTIONS = 10_000


#: SQLite's largest rowid: with it taken, new rows get ids drawn at random.
_MAX_ROWID = (1 << 63) - 1


def _new_ids(top: int, count: int) -> range | None:
    """The ids of ``count`` rows just inserted, in order, into ``messages`` whose largest
    id was ``top`` (0: empty); None when they must be read back. SQLite gives a row
    inserted without an id the largest id + 1 (no AUTOINCREMENT here) unless that
    largest is :data:`_MAX_ROWID`, and nothing else writes the table inside the
    transaction, so the ids are consecutive as long as they stay below it."""
    return range(top + 1, top + 1 + count) if top + count < _MAX_ROWID else None


def _passed(deadline: float) -> Callable[[], bool]:
    """A progress handler that stops the statement once ``deadline`` has passed, in the
    thread that installs it only."""
    thread = threading.get_ident()

    def passed() -> bool:
        return time.monotonic() >= deadline and threading.get_ident() == thread

    return passed


class StoreError(RuntimeError):
    """The store file cannot be used (not SQLite, no FTS5, newer schema)."""


class SqliteStore(StoreCommon):
    """An LCM history in one SQLite file."""

    _sql = SQLITE

    def __init__(self, path: str | Path, busy_timeout_seconds: float = 30.0) -> None:
        self.path = str(path)
        Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        #: Each thread's read deadline, while one is set (:meth:`read_deadline`).
        self._deadlines: dict[int, float] = {}
        self._busy_timeout = busy_timeout_seconds
        self._conn = sqlite3.connect(
            self.path,
            timeout=busy_timeout_seconds,
            isolation_level=None,
            check_same_thread=False,
        )
        try:
            self._setup()
        except sqlite3.DatabaseError as exc:
            self._conn.close()
            raise StoreError(
                f"LCM store {self.path} cannot be opened: {exc}. Point [engines.lcm] database "
                "at a new file or repair this one."
            ) from exc

    def _setup(self) -> None:
        conn = self._conn
        # Only a file without pages takes it; an existing one keeps its own size.
        conn.execute(f"PRAGMA page_size={NEW_FILE_PAGE_BYTES}")
        enable_wal(conn, timeout=self._busy_timeout)
        # WAL + NORMAL: a commit is atomic and consistent; a process crash loses nothing
        # committed (the WAL is in the OS's hands), a power loss may lose the newest
        # transactions but never corrupts the file (docs/lcm.md, "Durability").
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA temp_store=MEMORY")
        # A 16 MiB page cache: searches and appends touch few pages (index roots, the FTS
        # segments' term pages, the newest rows) and the OS caches the file anyway; a cache
        # the size of a 100,000-message store (64 MiB before) was most of the engine's
        # resident memory, for no measurable speed (docs/performance.md).
        conn.execute(f"PRAGMA cache_size=-{PAGE_CACHE_KIB}")
        # Checkpoint every ~40 MB of WAL instead of 4 MB: pages rewritten by consecutive
        # ingest batches (index and FTS segment pages) are copied back once, not per batch.
        checkpoint_every(conn)
        with self._lock:
            try:
                upgrade(conn, LCM_SQLITE_SCHEMA, f"LCM store {self.path}")
            except SchemaTooNew as exc:
                raise StoreError(f"{exc} ([engines.lcm] database)") from None
            except sqlite3.OperationalError as exc:
                if "fts5" in str(exc):
                    raise StoreError(
                        "this Python's sqlite3 has no FTS5; install a Python built with a "
                        "SQLite that includes FTS5"
                    ) from exc
                raise
            self._indexed = self._indexed_text_sql(conn)
            self._set_usermerge(conn)

    @staticmethod
    def _indexed_text_sql(conn: sqlite3.Connection) -> str:
        """What of a message is indexed: its first INDEXED_CHARS characters, or the whole
        text in a store made before prefix indexing that holds a longer message (its
        delete trigger must stay exact). Such a store without one gets the prefix trigger
        now: its rows are indexed the same either way."""
        prefix = _indexed_prefix("content")
        conn.execute("BEGIN IMMEDIATE")
        try:
            (trigger,) = conn.execute(
                "SELECT sql FROM sqlite_master WHERE type='trigger' AND name='messages_fts_delete'"
            ).fetchone()
            if "substr" in trigger:
                return prefix
            whole = conn.execute(
                "SELECT 1 FROM meta WHERE key=? UNION ALL SELECT 1 FROM messages "
                f"WHERE length(content) > {INDEXED_CHARS} LIMIT 1",
                (_WHOLE_TEXT_KEY,),
            ).fetchone()
            if whole is not None:
                conn.execute(
                    "INSERT OR IGNORE INTO meta(key, value) VALUES (?, '1')", (_WHOLE_TEXT_KEY,)
                )
                return "content"
            conn.execute("DROP TRIGGER messages_fts_delete")
            conn.execute(_delete_trigger(_indexed_prefix("old.content")))
            return prefix
        finally:
            conn.execute("COMMIT")

    @staticmethod
    def _set_usermerge(conn: sqlite3.Connection) -> None:
        """FTS5's ``usermerge`` for :meth:`tidy_search_index`, set once per file (a setting
        of the index, not a schema change: older versions never issue a merge)."""
        for fts in _FULL_TEXT_INDEXES:
            current = conn.execute(f"SELECT v FROM {fts}_config WHERE k = 'usermerge'").fetchone()
            if current is None or current[0] != _TIDY_MERGE_SEGMENTS:
                conn.execute(
                    f"INSERT INTO {fts}({fts}, rank) VALUES ('usermerge', ?)",
                    (_TIDY_MERGE_SEGMENTS,),
                )

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    @contextmanager
    def _tx(self, what: str = "") -> Iterator[sqlite3.Connection]:
        """One write transaction; ``what`` (the step, named in PostgreSQL's errors) is not
        needed: SQLite's errors say enough about a local file."""
        with self._lock:
            conn = self._conn
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            else:
                conn.execute("COMMIT")

    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        with self._reading() as conn:
            return conn.execute(sql, params).fetchall()

    @contextmanager
    def read_deadline(self, deadline: float | None) -> Iterator[None]:
        """The calling thread's read statements are interrupted at ``deadline`` within the
        block (:meth:`_reading`; None: not at all); an enclosing block's applies again after."""
        thread = threading.get_ident()
        enclosing = self._deadlines.pop(thread, None)
        if deadline is not None:
            self._deadlines[thread] = deadline
        try:
            yield
        finally:
            self._deadlines.pop(thread, None)
            if enclosing is not None:
                self._deadlines[thread] = enclosing

    @contextmanager
    def _reading(self) -> Iterator[sqlite3.Connection]:
        """The connection, locked, for read statements: past the calling thread's read
        deadline, the statement running is interrupted (:class:`StatementTimedOut`). Never
        inside a write transaction, whose statements must all run; the connection has no
        progress handler again when the block ends."""
        with self._lock:
            conn = self._conn
            deadline = self._deadlines.get(threading.get_ident())
            if deadline is None or conn.in_transaction:
                yield conn
                return
            if time.monotonic() >= deadline:
                raise StatementTimedOut(f"{self.path}: the deadline passed before the read")
            conn.set_progress_handler(_passed(deadline), DEADLINE_CHECK_INSTRUCTIONS)
            try:
                yield conn
            except sqlite3.OperationalError as exc:
                if exc.sqlite_errorcode == sqlite3.SQLITE_INTERRUPT:
                    raise StatementTimedOut(f"{self.path}: a read ran past its deadline") from exc
                raise
            finally:
                conn.set_progress_handler(None, 0)

    # Conversations.

    def current_conversation(self, session_id: str) -> Conversation:
        rows = self._read(
            f"SELECT {CONVERSATION_COLUMNS} FROM conversations WHERE session_id=? AND is_current=1",
            (session_id,),
        )
        if rows:
            return Conversation(*rows[0])
        with self._tx() as conn:
            row = conn.execute(
                f"SELECT {CONVERSATION_COLUMNS} FROM conversations "
                "WHERE session_id=? AND is_current=1",
                (session_id,),
            ).fetchone()
            if row is not None:
                return Conversation(*row)
            return self._insert_conversation(conn, session_id)

    def start_new_conversation(self, session_id: str) -> Conversation:
        with self._tx() as conn:
            conn.execute(
                "UPDATE conversations SET is_current=0 WHERE session_id=? AND is_current=1",
                (session_id,),
            )
            return self._insert_conversation(conn, session_id)

    def _insert_conversation(self, conn: sqlite3.Connection, session_id: str) -> Conversation:
        (generation,) = conn.execute(
            "SELECT COALESCE(MAX(generation), -1) + 1 FROM conversations WHERE session_id=?",
            (session_id,),
        ).fetchone()
        row = conn.execute(
            "INSERT INTO conversations(session_id, generation, created_at) VALUES (?, ?, ?) "
            f"RETURNING {CONVERSATION_COLUMNS}",
            (session_id, generation, time.time()),
        ).fetchone()
        return Conversation(*row)

    # Messages.

    def _counters_and_fresh(
        self, conn: sqlite3.Connection, conversation_id: int, messages: Sequence[NewMessage]
    ) -> tuple[int, int, list[NewMessage]]:
        """(message count, next ordinal), and ``messages`` whose versions are not stored
        yet (first of repeats kept). The transaction's write lock holds the counters."""
        count, next_ordinal = conn.execute(
            "SELECT message_count, next_ordinal FROM conversations WHERE id=?", (conversation_id,)
        ).fetchone()
        seen = self._existing_versions(conn, conversation_id, [m.message_uid for m in messages])
        return count, next_ordinal, first_unseen(messages, seen)

    @staticmethod
    def _link_sources(
        conn: sqlite3.Connection, table: str, column: str, summary_id: int, refs: Sequence[int]
    ) -> None:
        """A new summary's lineage rows: what it summarizes, in order."""
        conn.executemany(
            f"INSERT INTO {table}(summary_id, ord, {column}) VALUES (?,?,?)",
            [(summary_id, n, ref) for n, ref in enumerate(refs)],
        )

    def _insert_rows(
        self,
        conn: sqlite3.Connection,
        conversation_id: int,
        fresh: list[NewMessage],
        first_seq: int,
        first_ordinal: int,
    ) -> Appended:
        """Rows, context items and (by :data:`FTS_BATCH_MESSAGES`) full-text entries for
        ``fresh`` at free seq/ordinal slots."""
        last_seq = first_seq + len(fresh) - 1
        rows = [(conversation_id, first_seq + n, *m) for n, m in enumerate(fresh)]
        (top,) = conn.execute("SELECT max(id) FROM messages").fetchone()
        insert = (
            "INSERT INTO messages(conversation_id, seq, message_uid, role, content, "
            "extra_json, tool_call_id, tool_name, token_count, context_tokens, "
            "externalized, created_at, digest) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)"
        )
        half = len(rows) // 2
        if half:
            conn.executemany(insert, rows[:half])
        fault_point("lcm.ingest.mid_batch")
        conn.executemany(insert, rows[half:])
        ids: Sequence[int] | None = _new_ids(top or 0, len(rows))
        if ids is None:
            ids = [
                r[0]
                for r in conn.execute(
                    "SELECT id FROM messages WHERE conversation_id=? AND seq BETWEEN ? AND ? "
                    "ORDER BY seq",
                    (conversation_id, first_seq, last_seq),
                )
            ]
            self._index_at_random_ids(conn, conversation_id, first_seq, last_seq)
        else:
            mark = self._mark(conn)
            if ids[-1] - mark >= FTS_BATCH_MESSAGES:
                self._index_pending(conn, mark)
        # Set-based, as the full-text insert: the rows just written hold every column.
        conn.execute(
            "INSERT INTO context_items(conversation_id, ordinal, kind, ref_id, token_count, "
            "depth, role) SELECT conversation_id, seq + ?, 'message', id, context_tokens, -1, "
            "role FROM messages WHERE conversation_id=? AND seq BETWEEN ? AND ? ORDER BY seq",
            (first_ordinal - first_seq, conversation_id, first_seq, last_seq),
        )
        (version,) = conn.execute(
            "UPDATE conversations SET message_count=message_count+?, next_ordinal=next_ordinal+?, "
            "context_tokens=context_tokens+?, context_version=context_version+1 WHERE id=? "
            "RETURNING context_version",
            (len(fresh), len(fresh), sum(m.context_tokens for m in fresh), conversation_id),
        ).fetchone()
        items = [(first_ordinal + n, ref) for n, ref in enumerate(ids)]
        return appended(conversation_id, fresh, first_seq, items, version)

    @staticmethod
    def _mark(conn: sqlite3.Connection) -> int:
        """The largest message id in the full-text index (rows above it are pending)."""
        (mark,) = conn.execute(f"SELECT {_MARK}").fetchone()
        return mark

    def _index_pending(self, conn: sqlite3.Connection, mark: int) -> None:
        """Index every message above ``mark`` (read in this write transaction) in one
        set-based statement, in id order, and move the mark to the newest message: one
        FTS5 segment for the whole batch."""
        conn.execute(
            f"INSERT INTO messages_fts(rowid, content) SELECT id, {self._indexed} FROM messages "
            "WHERE id > ?",
            (mark,),
        )
        self._move_mark_to_top(conn)

    @staticmethod
    def _move_mark_to_top(conn: sqlite3.Connection) -> None:
        """Every message is indexed: the mark at the newest."""
        conn.execute(f"UPDATE meta SET value = {_TOP_ID} WHERE key = ?", (_INDEXED_THROUGH_KEY,))

    def _index_at_random_ids(
        self, conn: sqlite3.Connection, conversation_id: int, first_seq: int, last_seq: int
    ) -> None:
        """Index now the rows just stored at ids SQLite drew at random (its largest id is
        taken): some lie below the mark, where no batch would look. The pending rows go
        with them, in one statement, and the mark to the top."""
        conn.execute(
            f"INSERT INTO messages_fts(rowid, content) SELECT id, {self._indexed} FROM messages "
            "WHERE id > ? OR (conversation_id = ? AND seq BETWEEN ? AND ?)",
            (self._mark(conn), conversation_id, first_seq, last_seq),
        )
        self._move_mark_to_top(conn)

    def index_pending(self) -> None:
        """Index the pending messages, if any: every reader of ``messages_fts`` calls it
        first, so a message is found the moment its append returns, whichever connection
        or process stored it. A cheap read when none is pending; otherwise a short write
        transaction (the check repeated under its lock: another connection may have
        indexed them meanwhile)."""
        with self._lock:
            (pending,) = self._conn.execute(_ANY_PENDING).fetchone()
            if pending:
                with self._tx() as conn:
                    self._index_pending(conn, self._mark(conn))

    @staticmethod
    def _existing_versions(
        conn: sqlite3.Connection, conversation_id: int, uids: list[str]
    ) -> set[tuple[str, str]]:
        """The stored (uid, digest) versions of the given uids."""
        found: set[tuple[str, str]] = set()
        for start in range(0, len(uids), _ID_BATCH):
            batch = uids[start : start + _ID_BATCH]
            found.update(
                (r[0], r[1])
                for r in conn.execute(
                    "SELECT message_uid, digest FROM messages WHERE conversation_id=? AND "
                    f"message_uid IN ({SQLITE.marks(len(batch))})",
                    [conversation_id, *batch],
                )
            )
        return found

    def _rows_by_id(self, columns: str, table: str, ids: Iterable[int]) -> Iterator[tuple]:
        """Rows of ``table`` with the given ids, read in batches under SQLite's variable limit."""
        ids = list(ids)
        for start in range(0, len(ids), _ID_BATCH):
            batch = ids[start : start + _ID_BATCH]
            yield from self._read(
                f"SELECT {columns} FROM {table} WHERE id IN ({SQLITE.marks(len(batch))})", batch
            )

    def messages_by_id(self, ids: Iterable[int]) -> dict[int, StoredMessage]:
        return {
            row[0]: message_from_row(row)
            for row in self._rows_by_id(MESSAGE_COLUMNS, "messages", ids)
        }

    def message_by_uid(
        self, conversation_ids: Sequence[int], message_uid: str
    ) -> StoredMessage | None:
        for conversation_id in sorted(conversation_ids, reverse=True):
            rows = self._read(
                f"SELECT {MESSAGE_COLUMNS} FROM messages WHERE conversation_id=? AND message_uid=?"
                " ORDER BY seq DESC LIMIT 1",
                (conversation_id, message_uid),
            )
            if rows:
                return message_from_row(rows[0])
        return None

    # Summaries and lineage.

    def summaries_by_id(self, ids: Iterable[int]) -> dict[int, StoredSummary]:
        return {
            row[0]: StoredSummary(*row)
            for row in self._rows_by_id(SUMMARY_COLUMNS, "summaries", ids)
        }

    def parent_summaries_of_messages(self, message_ids: Iterable[int]) -> dict[int, int]:
        ids = list(message_ids)
        found: dict[int, int] = {}
        for start in range(0, len(ids), _ID_BATCH):
            batch = ids[start : start + _ID_BATCH]
            rows = self._read(
                "SELECT message_id, summary_id FROM summary_messages "
                f"WHERE message_id IN ({SQLITE.marks(len(batch))})",
                batch,
            )
            found.update({r[0]: r[1] for r in rows})
        return found

    # Search.

    @staticmethod
    def _conversations_clause(column: str, ids: Sequence[int]) -> tuple[str, list[Any]]:
        return f"{column} IN ({SQLITE.marks(len(ids))})", list(ids)

    def search_fulltext_many(self, searches: Sequence[FulltextSearch]) -> list[list[SearchHit]]:
        """One search after the other: in process, a statement costs no round trip."""
        return [self.search_fulltext(*search) for search in searches]

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
        """Matches newest first or by bm25; short texts whole, long ones as a snippet, or
        as their first ``preview_chars`` characters when given (cheaper: a caller that
        ranks many hits and shows few asks :meth:`snippets` for the ones it shows).

        By relevance, bm25 ranks the newest ``relevance_window`` matches (None: every match,
        for a caller that counted them and found them at most a window's worth). The
        matches that also match ``all_terms`` (the query with every term required), from
        the whole history and ranked by the same bm25, come first in the pool, so a message
        holding every word is a candidate however old it is, however often its words recur
        later and however low bm25 puts it (a long tool output); the caller's reranking
        orders the pool. The newest ``limit`` such matches are taken (usually all: holding
        every word is rare; where every word is common, thousands may)."""
        if not conversation_ids:
            return []
        if target == "messages":
            self.index_pending()
        fts, alias, table = (
            ("messages_fts", "m", "messages")
            if target == "messages"
            else ("summaries_fts", "s", "summaries")
        )
        scope, scope_params = self._scope_sql(alias, conversation_ids, since, until)
        extra = "m.role, m.seq, -1" if target == "messages" else "'', s.first_seq, s.depth"
        call = "m.tool_name IS NOT NULL" if target == "messages" else "NULL"
        time_column = "created_at" if target == "messages" else "latest_at"
        score = (
            f"bm25({fts}) * CASE WHEN {_TOOL_WRITTEN} THEN {TOOL_OUTPUT_WEIGHT} ELSE 1.0 END"
            if target == "messages"
            else f"bm25({fts})"
        )
        # A long text: its beginning; newest first without a preview, the store's snippet
        # (read in the same statement; by relevance, asked for the rows kept afterwards).
        beginning = f"substr({alias}.content, 1, {int(preview_chars or whole_chars)})"
        snippet = f"snippet({fts}, 0, '', '', '…', {_SNIPPET_TOKENS})"

        def columns(long_text: str) -> str:
            return (
                f"{alias}.id, {alias}.conversation_id, {alias}.{time_column}, CASE WHEN "
                f"length({alias}.content) <= {int(whole_chars)} THEN {alias}.content "
                f"ELSE {long_text} END, {extra}"
            )

        joined = f"FROM {fts} JOIN {table} {alias} ON {alias}.id = {fts}.rowid"

        def window(query: str) -> Any:
            # Rank only the newest matches: bm25 over every match of a common term would
            # cost time proportional to the history. The window is counted among the
            # caller's matches (scope first): other sessions' matches must not push the
            # caller's own out of it. Fewer matches than the window in the whole index
            # (the usual case) need no floor: that probe walks the index alone, without
            # reading a row per match.
            if relevance_window is None:
                return None
            probe = self._conn.execute(
                f"SELECT rowid FROM {fts} WHERE {fts} MATCH ? ORDER BY rowid DESC LIMIT 1 OFFSET ?",
                (query, relevance_window - 1),
            ).fetchone()
            if probe is None:
                return None
            return self._conn.execute(
                f"SELECT {fts}.rowid {joined} WHERE {fts} MATCH ? AND {scope} "
                f"ORDER BY {fts}.rowid DESC LIMIT 1 OFFSET ?",
                (query, *scope_params, relevance_window - 1),
            ).fetchone()

        def ranked(query: str, holding: str | None = None) -> list[Any]:
            # The matches are ranked on their ids and scores alone, and only the best
            # ``limit`` are read whole: a sort would carry every column of every match,
            # and a column stored after a long text costs a read through the text.
            # ``holding``: only the matches that match it too, its newest ``limit`` from
            # the whole history. The unary plus keeps SQLite from handing that list to
            # FTS5 as rowids to look the query up at one by one: each look-up walks a
            # common word's whole list (25,000 took two minutes); the query's matches are
            # read once instead, and bm25 runs for the rows in the list alone.
            floor = window(query) if holding is None else None
            sql = (
                f"WITH top AS MATERIALIZED (SELECT {fts}.rowid AS id, {score} AS score "
                f"{joined} WHERE {fts} MATCH ? AND {scope}"
                + (f" AND {fts}.rowid >= ?" if floor else "")
                + (f" AND +{fts}.rowid IN (SELECT rowid FROM {fts} WHERE {fts} MATCH ? "
                   "ORDER BY rowid DESC LIMIT ?)" if holding else "")
                + f" ORDER BY 2 LIMIT ?) SELECT {columns(beginning)}, top.score, "
                f"{call} FROM top JOIN {table} {alias} ON {alias}.id = top.id ORDER BY top.score"
            )  # fmt: skip
            params = [
                query, *scope_params, *([floor[0]] if floor else []),
                *([holding, limit] if holding else []), limit,
            ]  # fmt: skip
            return self._conn.execute(sql, params).fetchall()

        with self._reading():
            if by_relevance:
                rows = ranked(fts_query)
                # Holding every word: in the pool whatever its bm25, which is the query's
                # own (bm25 of the every-word query would cost a pass over each word's
                # every match, its statistics: time in proportion to the history).
                if all_terms:
                    every = ranked(fts_query, holding=all_terms)
                    ids = {r[0] for r in every}
                    rows = [*every, *(r for r in rows if r[0] not in ids)][:limit]
            else:
                sql = (
                    f"SELECT {columns(snippet if preview_chars is None else beginning)}, "
                    f"{score}, {call} {joined} WHERE {fts} MATCH ? AND {scope} "
                    f"ORDER BY {fts}.rowid DESC LIMIT ?"
                )
                rows = self._conn.execute(sql, [fts_query, *scope_params, limit]).fetchall()
        kind: Literal["message", "summary"] = "message" if target == "messages" else "summary"
        hits = [
            SearchHit(  # type: ignore[misc, call-arg]  # mypy cannot count the splat
                kind, *r[:7], float(r[7]), tool_call=None if r[8] is None else bool(r[8])
            )
            for r in rows
        ]
        if by_relevance and preview_chars is None:
            long_ids = [h.id for h in hits if len(h.text) >= whole_chars]
            found = self.snippets(target, fts_query, long_ids, whole_chars) if long_ids else {}
            hits = [h._replace(text=found[h.id]) if h.id in found else h for h in hits]
        return hits

    def match_counts_by_target(
        self, targets: Sequence[Literal["messages", "summaries"]], operands: Sequence[str], cap: int
    ) -> MatchCounts:
        """How many texts of every session in each of ``targets`` match each of
        ``operands``, each counted up to ``cap`` (one statement; a common term costs
        ``cap`` index entries per target, not its all)."""
        if not operands or not targets:
            return []
        if "messages" in targets:
            self.index_pending()
        tables = ["messages_fts" if t == "messages" else "summaries_fts" for t in targets]
        one = ", ".join(
            f"(SELECT count(*) FROM (SELECT 1 FROM {fts} WHERE {fts} MATCH ? LIMIT ?))"
            for fts in tables
        )
        params = [value for operand in operands for _ in tables for value in (operand, cap)]
        with self._reading() as conn:
            row = conn.execute("SELECT " + ", ".join([one] * len(operands)), params).fetchone()
        width = len(targets)
        return [
            dict(zip(targets, row[i : i + width], strict=True)) for i in range(0, len(row), width)
        ]

    def snippets(
        self,
        target: Literal["messages", "summaries"],
        fts_query: str,
        ids: Sequence[int],
        whole_chars: int,
    ) -> dict[int, str]:
        """The snippet of each of ``ids`` longer than ``whole_chars`` that matches."""
        if not ids:
            return {}
        if target == "messages":
            self.index_pending()
        fts, table = ("messages_fts", "messages") if target == "messages" else (
            "summaries_fts", "summaries")  # fmt: skip
        marks = ", ".join("?" * len(ids))
        sql = (
            f"SELECT {fts}.rowid, snippet({fts}, 0, '', '', '…', {_SNIPPET_TOKENS}) "
            f"FROM {fts} JOIN {table} t ON t.id = {fts}.rowid WHERE {fts} MATCH ? "
            f"AND {fts}.rowid IN ({marks}) AND length(t.content) > ?"
        )
        with self._reading() as conn:
            rows = conn.execute(sql, [fts_query, *ids, whole_chars]).fetchall()
        return {row[0]: row[1] for row in rows}

    def search_within_summaries(
        self, summary_ids: Sequence[int], fts_query: str, limit: int, whole_chars: int
    ) -> dict[int, list[SearchHit]]:
        """The matching messages of each summary's span, best first (a statement for the
        spans, then one per span: reads in process cost no round trip)."""
        self.index_pending()
        return {
            summary.id: self._search_span(summary, fts_query, limit, whole_chars)
            for summary in self.summaries_by_id(summary_ids).values()
        }

    def _search_span(
        self, summary: StoredSummary, fts_query: str, limit: int, whole_chars: int
    ) -> list[SearchHit]:
        """Matching messages of one summary's span (a sequence range of its conversation),
        in one statement.

        The range becomes a rowid range, which FTS5 seeks to directly. The messages
        holding more of the query's operands come first, newest first among equals: bm25
        would let short texts that repeat one term outrank a long log holding most of the
        terms, and its global statistics cost a pass over each term's whole index per
        statement. At most ``_WITHIN_CANDIDATES`` of the newest matches are ranked; the
        operands held are counted in SQL (one query per operand over the candidates'
        range, each materialized once), and the rows shown get their snippets from one
        more pass over the range they lie in (``+rowid``: a seek per row would look every
        term up again in every index segment). That range and the best rows are
        materialized CTEs: read through as subqueries of the CTEs they come from, the same
        statements cost 18% more instructions (the inner hits of the 2,000-turn replay's
        probe searches). A span of at most ``_WITHIN_CANDIDATES`` messages has every match
        a candidate, read in rowid order: FTS5 seeks backwards into a rowid range at ~0.1
        ms per common term, five times its forward seek. In both passes the full-text
        index leads the joins (``CROSS JOIN``): SQLite would otherwise run the query
        once per message of the span, or once per row shown.
        """
        span = (
            "WITH span AS (SELECT MIN(id) AS lo, MAX(id) AS hi FROM messages "
            "WHERE conversation_id=? AND seq IN (?, ?))"
        )
        in_span = "rowid BETWEEN (SELECT lo FROM span) AND (SELECT hi FROM span)"
        operands = query_operands(fts_query)
        operands = operands if len(operands) > 1 else []  # one operand: every match holds it
        held = (
            " + ".join(
                "(id IN (SELECT rowid FROM messages_fts WHERE messages_fts MATCH ? AND rowid "
                "BETWEEN (SELECT lo FROM bounds) AND (SELECT hi FROM bounds)))"
                for _ in operands
            )
            or "0"
        )
        newest = summary.last_seq - summary.first_seq >= _WITHIN_CANDIDATES
        sql = (
            f"{span}, candidates AS (SELECT messages_fts.rowid AS id FROM messages_fts "
            "CROSS JOIN messages m ON m.id = messages_fts.rowid WHERE messages_fts MATCH ? "
            f"AND messages_fts.{in_span} AND m.conversation_id = ? AND m.seq BETWEEN ? AND ?"
            + (" ORDER BY messages_fts.rowid DESC LIMIT ?), " if newest else "), ")
            + "bounds AS MATERIALIZED (SELECT MIN(id) AS lo, MAX(id) AS hi FROM candidates), "
            f"best AS MATERIALIZED (SELECT id, {held} AS held FROM candidates "
            "ORDER BY held DESC, id DESC LIMIT ?) "
            "SELECT m.id, m.conversation_id, m.created_at, "
            f"CASE WHEN length(m.content) <= {int(whole_chars)} THEN m.content "
            f"ELSE snippet(messages_fts, 0, '', '', '…', {_SNIPPET_TOKENS}) END, "
            "m.role, m.seq, best.held FROM messages_fts "
            "CROSS JOIN best ON best.id = +messages_fts.rowid "
            "CROSS JOIN messages m ON m.id = best.id "
            "WHERE messages_fts MATCH ? AND messages_fts.rowid "
            "BETWEEN (SELECT MIN(id) FROM best) AND (SELECT MAX(id) FROM best) "
            "ORDER BY best.held DESC, best.id DESC"
        )
        seqs = (summary.conversation_id, summary.first_seq, summary.last_seq)
        cap = [_WITHIN_CANDIDATES] if newest else []
        params = [*seqs, fts_query, *seqs, *cap, *operands, limit, fts_query]
        with self._reading() as conn:
            rows = conn.execute(sql, params).fetchall()
        return [
            SearchHit("message", r[0], r[1], r[2], r[3], r[4], r[5], -1, -float(r[6])) for r in rows
        ]

    def _scan_page(self, sql: str, params: Sequence[Any]) -> list[tuple]:
        return self._read(sql, params)

    # Sub-agent grants.

    # The semantic index (semantic.VectorStore).

    def unembedded_message_ids(self, conversation_id: int, newest: int) -> list[int]:
        """Ids of the conversation's newest ``newest`` messages that have no vector yet,
        newest first (read once per search: the index's primary key answers each)."""
        rows = self._read(
            "SELECT m.id FROM (SELECT id FROM messages WHERE conversation_id = ? "
            "ORDER BY seq DESC LIMIT ?) m WHERE NOT EXISTS (SELECT 1 FROM message_vectors v "
            "WHERE v.conversation_id = ? AND v.message_id = m.id)",
            (conversation_id, newest, conversation_id),
        )
        return [r[0] for r in rows]

    def message_beginnings(self, ids: Sequence[int], chars: int) -> list[tuple[int, float, str]]:
        """(id, time, first ``chars`` characters) of the given messages."""
        out: list[tuple[int, float, str]] = []
        for start in range(0, len(ids), _ID_BATCH):
            batch = list(ids[start : start + _ID_BATCH])
            out += self._read(
                f"SELECT id, created_at, substr(content, 1, ?) FROM messages WHERE id IN "
                f"({SQLITE.marks(len(batch))})",
                [chars, *batch],
            )
        return out

    def put_message_vectors(self, rows: Sequence[tuple[int, int, float, bytes]]) -> None:
        """Store (message id, conversation id, time, vector) rows; a known message keeps
        its own. The time is copied so that a search reads this table alone."""
        with self._tx() as conn:
            conn.executemany(
                "INSERT OR IGNORE INTO message_vectors(message_id, conversation_id, created_at, "
                "vector) VALUES (?, ?, ?, ?)",
                rows,
            )

    def message_vectors(
        self,
        conversation_ids: Sequence[int],
        since: float | None,
        until: float | None,
        limit: int,
    ) -> list[tuple[int, bytes]]:
        """(message id, vector) of the newest ``limit`` vectors of the conversations whose
        messages were stored in [since, until]."""
        if not conversation_ids:
            return []
        scope, params = self._conversations_clause("v.conversation_id", conversation_ids)
        for bound, operator in ((since, ">="), (until, "<=")):
            if bound is not None:
                scope += f" AND v.created_at {operator} ?"
                params.append(bound)
        return self._read(
            f"SELECT v.message_id, v.vector FROM message_vectors v WHERE {scope} "
            "ORDER BY v.message_id DESC LIMIT ?",
            [*params, limit],
        )

    def revoke_grants(self, child_session_id: str, grant_id: int | None = None) -> int:
        with self._tx() as conn:
            if grant_id is None:
                cur = conn.execute(
                    "DELETE FROM grants WHERE child_session_id=?", (child_session_id,)
                )
            else:
                cur = conn.execute(
                    "DELETE FROM grants WHERE child_session_id=? AND id=?",
                    (child_session_id, grant_id),
                )
            return cur.rowcount

    # Upkeep.

    def tidy_search_index(self) -> None:
        """Merge full-text segments, at most ``TIDY_MERGE_PAGES`` pages of each index.

        Every ingest transaction (a turn) writes a small FTS5 segment, and automerge only
        joins eight of one level, so a long history keeps ~15 segments per index, each
        looked up for every term of every search. Merging any two of a level (usermerge 2,
        set at open) after each compaction keeps about one per level: ``lcm_grep`` at
        100,000 messages ~15% less CPU, for ~3 ms per compaction (docs/performance.md).
        The pending messages are indexed first, in the same transaction."""
        with self._tx() as conn:
            self._index_pending(conn, self._mark(conn))
            for fts in _FULL_TEXT_INDEXES:
                conn.execute(
                    f"INSERT INTO {fts}({fts}, rank) VALUES ('merge', ?)", (TIDY_MERGE_PAGES,)
                )

    # Health.

    def size_bytes(self) -> int:
        total = 0
        for suffix in ("", "-wal", "-shm"):
            p = Path(self.path + suffix)
            if p.exists():
                total += p.stat().st_size
        return total

    def integrity_check(self) -> str:
        """SQLite's quick check; pending messages are indexed first (a SQLite that checks
        FTS5 indexes against their content would report them missing)."""
        self.index_pending()
        rows = self._read("PRAGMA quick_check")
        return "; ".join(str(r[0]) for r in rows[:5])
