"""The transcript store: sessions, every message row ever written, and each session's live view.

Rows are never deleted or rewritten: a compaction writes the rows it needs
(summaries, rewritten messages) and points the live view at a new list of rows.
``message_uid`` identity (docs/design.md, "The contract") is assigned by
:func:`stamp_identities` before a row is written, so every backend shares it.

:class:`TranscriptStore` is the interface; :class:`SQLiteTranscriptStore` the
embedded backend (one file, WAL). A PostgreSQL backend implements the same protocol.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from filelock import FileLock, Timeout

from .._moved import moved_attribute
from ..contract.models import PERSISTENCE_ONLY_FIELDS
from ..faults import fault_point
from ..json_text import json_dumper
from ..paths import user_data_dir
from .sqlite_schema import SchemaTooNew, SqliteSchema, checkpoint_every, enable_wal, upgrade

Message = dict[str, Any]

DEFAULT_STORE_NAME = "transcripts.db"
#: Seconds ``open_session`` waits for a session another process holds (both backends).
LEASE_TIMEOUT_ENV = "CTXENGINE_LEASE_TIMEOUT"
DEFAULT_LEASE_TIMEOUT = 30.0


def mint_uid() -> str:
    """A new ``message_uid``: 32 hex digits of 128 bits from ``os.urandom``.

    The source ``uuid.uuid4`` draws from, without building a ``UUID`` around the bytes
    (a fifth of the cost; one or more uids per stored message). Nothing reads a version
    from a uid: it is documented as 32 hex digits (docs/design.md, "The contract").
    """
    return os.urandom(16).hex()


class ToolCallPairing:
    """Per-occurrence tool-call uids of the latest assistant message, for pairing its results."""

    def __init__(self) -> None:
        self._uids: dict[str, Any] = {}
        self._answered: dict[str, int] = {}

    def start(self, uids: dict[str, Any]) -> None:
        self._uids = dict(uids)
        self._answered = {}

    def clear(self) -> None:
        self._uids = {}
        self._answered = {}

    def copy(self) -> ToolCallPairing:
        other = ToolCallPairing()
        other._uids = dict(self._uids)
        other._answered = dict(self._answered)
        return other

    def uid_for(self, call_id: str) -> str | None:
        """The uid of the next unanswered occurrence of ``call_id`` (lists: one per occurrence)."""
        value = self._uids.get(call_id)
        if isinstance(value, list):
            if not value:
                return None
            index = min(self._answered.get(call_id, 0), len(value) - 1)
            self._answered[call_id] = self._answered.get(call_id, 0) + 1
            return value[index]
        return value if isinstance(value, str) else None

    def observe(self, message: Message) -> None:
        """Follow a message already carrying its identity (resume, copies)."""
        role = message.get("role")
        if role == "assistant" and message.get("tool_calls"):
            self.start(message.get("_tool_call_uids") or {})
        elif role in ("user", "assistant"):
            self.clear()


def stamp_identities(messages: Iterable[Message], pairing: ToolCallPairing) -> list[Message]:
    """Copies of ``messages`` with the persistence identity a first store gives them.

    Kept when present (copies, rewrites, engine-authored rows); otherwise a new
    ``message_uid``; an assistant's tool calls get ``_tool_call_uids`` (a provider
    id repeated in one response shares one uid); a tool result gets the matching
    ``_tool_call_uid`` from the preceding assistant message.
    """
    out = []
    for original in messages:
        message = dict(original)
        if not isinstance(message.get("message_uid"), str) or not message["message_uid"]:
            message["message_uid"] = mint_uid()
        role = message.get("role")
        if role == "assistant" and message.get("tool_calls"):
            if not isinstance(message.get("_tool_call_uids"), dict):
                uids: dict[str, str] = {}
                for call in message["tool_calls"]:
                    call_id = call.get("id") if isinstance(call, dict) else None
                    if isinstance(call_id, str) and call_id not in uids:
                        uids[call_id] = mint_uid()
                message["_tool_call_uids"] = uids
            pairing.start(message["_tool_call_uids"])
        elif role == "tool":
            if not message.get("_tool_call_uid"):
                uid = pairing.uid_for(str(message.get("tool_call_id", "")))
                if uid:
                    message["_tool_call_uid"] = uid
        elif role in ("user", "assistant"):
            pairing.clear()
        out.append(message)
    return out


@dataclass(frozen=True)
class StoredMessage:
    """One row: the message (persistence fields included), its version digest, its origin."""

    row_id: int
    message: Message
    digest: str
    origin: str
    created_at: float = 0.0


@dataclass(frozen=True)
class SessionRow:
    session_id: str
    parent_session_id: str | None
    created_at: float
    ended_at: float | None
    turn_index: int
    system_prompt: str | None
    tools: list[dict[str, Any]] | None
    created: bool = False
    #: A ``reset()`` was begun and not finished (the process died in between).
    reset_pending: bool = False


class SessionBusy(TimeoutError):
    """Another process holds the session (its lease) and did not release it in time."""


class TranscriptStore(Protocol):
    """What the runtime needs from a transcript store; every method is thread-safe."""

    location: str
    #: The store's persisted identity (not its path): created with the store, the same for
    #: every process using it; engines key their own data by it (docs/reliability.md).
    store_id: str

    def open_session(
        self,
        session_id: str,
        *,
        parent_session_id: str | None = None,
        system_prompt: str | None = None,
        tools: list[dict[str, Any]] | None = None,
    ) -> SessionRow: ...

    def get_session(self, session_id: str) -> SessionRow | None: ...

    def update_session(
        self, session_id: str, *, turn_index: int | None = None, ended: bool | None = None
    ) -> None: ...

    def append_live(
        self, session_id: str, rows: Sequence[tuple[Message, str, str]], start_position: int
    ) -> list[int]: ...

    def insert_rows(
        self, session_id: str, rows: Sequence[tuple[Message, str, str]]
    ) -> list[int]: ...

    def replace_live(self, session_id: str, row_ids: Sequence[int]) -> None: ...

    def begin_reset(self, session_id: str) -> None:
        """Record that a reset of the session started (the engine resets next)."""
        ...

    def finish_reset(self, session_id: str) -> None:
        """Empty the live view and clear the reset record, in one commit."""
        ...

    def holds_message(self, session_id: str, message_uid: str) -> bool:
        """Whether the session's transcript has a row with this uid (any version)."""
        ...

    def live(self, session_id: str) -> list[StoredMessage]: ...

    def rows(self, session_id: str) -> list[StoredMessage]: ...

    def count_rows(self, session_id: str) -> int: ...

    def is_bootstrapped(self, engine: str, session_id: str) -> bool: ...

    def mark_bootstrapped(self, engine: str, session_id: str) -> None: ...

    def session_ids(self) -> list[str]: ...

    def close(self) -> None: ...


_SCHEMA_V1 = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS sessions (
    session_id TEXT PRIMARY KEY,
    parent_session_id TEXT,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    ended_at REAL,
    turn_index INTEGER NOT NULL DEFAULT 0,
    system_prompt TEXT,
    tools TEXT
);
CREATE TABLE IF NOT EXISTS messages (
    row_id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL REFERENCES sessions(session_id),
    message_uid TEXT NOT NULL,
    role TEXT NOT NULL,
    body TEXT NOT NULL,
    digest TEXT NOT NULL,
    absorbed_message_uids TEXT,
    tool_call_uids TEXT,
    tool_call_uid TEXT,
    origin TEXT NOT NULL,
    created_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS messages_by_session ON messages(session_id, row_id);
CREATE INDEX IF NOT EXISTS messages_by_uid ON messages(message_uid);
CREATE TABLE IF NOT EXISTS live (
    session_id TEXT NOT NULL,
    position INTEGER NOT NULL,
    row_id INTEGER NOT NULL REFERENCES messages(row_id),
    PRIMARY KEY (session_id, position)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS bootstraps (
    engine TEXT NOT NULL,
    session_id TEXT NOT NULL,
    done_at REAL NOT NULL,
    PRIMARY KEY (engine, session_id)
) WITHOUT ROWID;
CREATE VIEW IF NOT EXISTS live_messages AS
    SELECT live.session_id AS session_id, live.position AS position, messages.row_id AS row_id,
           messages.message_uid AS message_uid, messages.role AS role, messages.body AS body
    FROM live JOIN messages ON messages.row_id = live.row_id;
"""

#: Version 2 (#13): the store's identity, and the record of a reset in progress.
_SCHEMA_V2 = """
ALTER TABLE sessions ADD COLUMN reset_pending INTEGER NOT NULL DEFAULT 0;
INSERT OR IGNORE INTO meta(key, value) VALUES ('store_id', lower(hex(randomblob(16))));
"""

#: Append a step for every change of the stored data; never edit an old one.
TRANSCRIPT_SQLITE_SCHEMA = SqliteSchema("transcript", (_SCHEMA_V1, _SCHEMA_V2))
SCHEMA_VERSION = TRANSCRIPT_SQLITE_SCHEMA.latest

_ROW_COLUMNS = (
    "row_id, message_uid, body, digest, absorbed_message_uids, tool_call_uids, tool_call_uid,"
    " origin, created_at"
)


def default_store_path(configured: str | None = None) -> Path:
    """``[store] path`` when set, else ``<user data dir>/transcripts.db``."""
    if configured:
        return Path(configured).expanduser()
    return user_data_dir() / DEFAULT_STORE_NAME


def lease_timeout_seconds() -> float:
    """``CTXENGINE_LEASE_TIMEOUT`` or the default."""
    return float(os.environ.get(LEASE_TIMEOUT_ENV) or DEFAULT_LEASE_TIMEOUT)


class SessionLeases:
    """One process's leases on the sessions of one SQLite store: an OS file lock per
    session (``filelock``: ``flock`` on POSIX, ``msvcrt`` on Windows), which the OS drops
    when the process dies, so a crashed holder never blocks the next one."""

    def __init__(self, store_path: Path, timeout: float) -> None:
        self.directory = store_path.with_name(store_path.name + ".leases")
        self.timeout = timeout
        self._held: dict[str, FileLock] = {}
        self._lock = threading.Lock()

    def acquire(self, session_id: str, location: str) -> None:
        with self._lock:
            if session_id in self._held:
                return
            self.directory.mkdir(parents=True, exist_ok=True)
            name = hashlib.blake2b(session_id.encode("utf-8"), digest_size=16).hexdigest()
            lock = FileLock(self.directory / f"{name}.lock", thread_local=False)
            try:
                lock.acquire(timeout=self.timeout, poll_interval=0.02)
            except Timeout:
                raise SessionBusy(
                    f"session {session_id!r} is open in another process on {location} "
                    f"(waited {self.timeout:g}s); end it there, or raise {LEASE_TIMEOUT_ENV}"
                ) from None
            self._held[session_id] = lock

    def release(self, session_id: str) -> None:
        with self._lock:
            lock = self._held.pop(session_id, None)
        if lock is not None:
            lock.release()

    def release_all(self) -> None:
        with self._lock:
            held, self._held = list(self._held.values()), {}
        for lock in held:
            lock.release()


class SQLiteTranscriptStore:
    """The embedded transcript store: one SQLite file in WAL mode, one connection, one lock.

    A session is leased by one process at a time (:class:`SessionLeases`): a second
    process opening it waits ``CTXENGINE_LEASE_TIMEOUT`` seconds, then gets
    :class:`SessionBusy`; the two can never write at the same live-view positions.
    """

    def __init__(self, path: str | Path, *, lease_timeout: float | None = None) -> None:
        self.path = Path(path).expanduser()
        self.location = str(self.path)
        self._lock = threading.RLock()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(
                str(self.path), check_same_thread=False, isolation_level=None, timeout=30.0
            )
            enable_wal(self._db, timeout=30.0)
            self._db.execute("PRAGMA synchronous=NORMAL")
            # Every append commits; ~40 MB of WAL between checkpoints, not SQLite's ~4 MB.
            checkpoint_every(self._db)
            self._db.execute("PRAGMA foreign_keys=ON")
            with self._lock:
                try:
                    upgrade(self._db, TRANSCRIPT_SQLITE_SCHEMA, self.location)
                except SchemaTooNew as exc:
                    self._db.close()
                    raise RuntimeError(f"{exc} ([store] path)") from None
                (self.store_id,) = self._db.execute(
                    "SELECT value FROM meta WHERE key='store_id'"
                ).fetchone()
        except (OSError, sqlite3.Error) as exc:
            raise TranscriptStoreError(store_failure(self.path, exc)) from exc
        timeout = lease_timeout if lease_timeout is not None else lease_timeout_seconds()
        self._leases = SessionLeases(self.path, timeout)

    def _transaction(self) -> _Transaction:
        return _Transaction(self._db, self._lock, self.path)

    # Sessions.

    def open_session(
        self,
        session_id: str,
        *,
        parent_session_id: str | None = None,
        system_prompt: str | None = None,
        tools: list[dict[str, Any]] | None = None,
    ) -> SessionRow:
        self._leases.acquire(session_id, self.location)
        fault_point("host.lease.acquired")
        try:
            return self._open_session(session_id, parent_session_id, system_prompt, tools)
        except BaseException:
            self._leases.release(session_id)
            raise

    def _open_session(
        self,
        session_id: str,
        parent_session_id: str | None,
        system_prompt: str | None,
        tools: list[dict[str, Any]] | None,
    ) -> SessionRow:
        now = time.time()
        with self._transaction():
            existing = self._session(session_id)
            if existing is not None:
                updates: dict[str, Any] = {"updated_at": now, "ended_at": None}
                if system_prompt is not None:
                    updates["system_prompt"] = system_prompt
                if tools is not None:
                    updates["tools"] = json.dumps(tools)
                assignments = ", ".join(f"{k} = ?" for k in updates)
                self._db.execute(
                    f"UPDATE sessions SET {assignments} WHERE session_id = ?",
                    (*updates.values(), session_id),
                )
                row = self._session(session_id)
                assert row is not None
                return row
            self._db.execute(
                "INSERT INTO sessions(session_id, parent_session_id, created_at, updated_at,"
                " system_prompt, tools) VALUES (?, ?, ?, ?, ?, ?)",
                (
                    session_id,
                    parent_session_id,
                    now,
                    now,
                    system_prompt,
                    json.dumps(tools) if tools is not None else None,
                ),
            )
            row = self._session(session_id)
            assert row is not None
            return SessionRow(**{**row.__dict__, "created": True})

    def _session(self, session_id: str) -> SessionRow | None:
        row = self._db.execute(
            "SELECT session_id, parent_session_id, created_at, ended_at, turn_index,"
            " system_prompt, tools, reset_pending FROM sessions WHERE session_id = ?",
            (session_id,),
        ).fetchone()
        if row is None:
            return None
        return session_from_row(row)

    def get_session(self, session_id: str) -> SessionRow | None:
        with self._lock:
            return self._session(session_id)

    def update_session(
        self, session_id: str, *, turn_index: int | None = None, ended: bool | None = None
    ) -> None:
        now = time.time()
        with self._transaction():
            if turn_index is not None:
                self._db.execute(
                    "UPDATE sessions SET turn_index = ?, updated_at = ? WHERE session_id = ?",
                    (turn_index, now, session_id),
                )
            if ended is not None:
                self._db.execute(
                    "UPDATE sessions SET ended_at = ?, updated_at = ? WHERE session_id = ?",
                    (now if ended else None, now, session_id),
                )
        if ended:
            self._leases.release(session_id)

    def session_ids(self) -> list[str]:
        with self._lock:
            return [r[0] for r in self._db.execute("SELECT session_id FROM sessions ORDER BY 1")]

    # Messages and the live view.

    def _insert(self, session_id: str, rows: Sequence[tuple[Message, str, str]]) -> list[int]:
        now = time.time()
        ids = []
        for message, digest, origin in rows:
            cursor = self._db.execute(
                "INSERT INTO messages(session_id, message_uid, role, body, digest,"
                " absorbed_message_uids, tool_call_uids, tool_call_uid, origin, created_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                message_row_values(session_id, message, digest, origin, now),
            )
            ids.append(int(cursor.lastrowid or 0))
        return ids

    def insert_rows(self, session_id: str, rows: Sequence[tuple[Message, str, str]]) -> list[int]:
        """Write rows without touching the live view."""
        with self._transaction():
            return self._insert(session_id, rows)

    def append_live(
        self, session_id: str, rows: Sequence[tuple[Message, str, str]], start_position: int
    ) -> list[int]:
        """Write rows and append them to the live view at ``start_position``, in one commit."""
        with self._transaction():
            ids = self._insert(session_id, rows)
            fault_point("store.append_live.mid_transaction")
            self._db.executemany(
                "INSERT OR REPLACE INTO live(session_id, position, row_id) VALUES (?, ?, ?)",
                [(session_id, start_position + i, row_id) for i, row_id in enumerate(ids)],
            )
            return ids

    def replace_live(self, session_id: str, row_ids: Sequence[int]) -> None:
        """Point the live view at ``row_ids`` (rows stay)."""
        with self._transaction():
            self._db.execute("DELETE FROM live WHERE session_id = ?", (session_id,))
            self._db.executemany(
                "INSERT INTO live(session_id, position, row_id) VALUES (?, ?, ?)",
                [(session_id, i, row_id) for i, row_id in enumerate(row_ids)],
            )

    def begin_reset(self, session_id: str) -> None:
        with self._transaction():
            self._db.execute(
                "UPDATE sessions SET reset_pending = 1 WHERE session_id = ?", (session_id,)
            )

    def finish_reset(self, session_id: str) -> None:
        with self._transaction():
            self.replace_live(session_id, [])
            fault_point("store.finish_reset.mid_transaction")
            self._db.execute(
                "UPDATE sessions SET reset_pending = 0 WHERE session_id = ?", (session_id,)
            )

    def holds_message(self, session_id: str, message_uid: str) -> bool:
        with self._lock:
            return (
                self._db.execute(
                    "SELECT 1 FROM messages WHERE message_uid = ? AND session_id = ? LIMIT 1",
                    (message_uid, session_id),
                ).fetchone()
                is not None
            )

    def live(self, session_id: str) -> list[StoredMessage]:
        cols = ", ".join(f"m.{c.strip()}" for c in _ROW_COLUMNS.split(","))
        with self._lock:
            rows = self._db.execute(
                f"SELECT {cols} FROM live l JOIN messages m ON m.row_id = l.row_id"
                " WHERE l.session_id = ? ORDER BY l.position",
                (session_id,),
            ).fetchall()
        return [stored_from_row(r) for r in rows]

    def rows(self, session_id: str) -> list[StoredMessage]:
        with self._lock:
            rows = self._db.execute(
                f"SELECT {_ROW_COLUMNS} FROM messages WHERE session_id = ? ORDER BY row_id",
                (session_id,),
            ).fetchall()
        return [stored_from_row(r) for r in rows]

    def count_rows(self, session_id: str) -> int:
        with self._lock:
            return int(
                self._db.execute(
                    "SELECT COUNT(*) FROM messages WHERE session_id = ?", (session_id,)
                ).fetchone()[0]
            )

    # Bootstrap records.

    def is_bootstrapped(self, engine: str, session_id: str) -> bool:
        with self._lock:
            return (
                self._db.execute(
                    "SELECT 1 FROM bootstraps WHERE engine = ? AND session_id = ?",
                    (engine, session_id),
                ).fetchone()
                is not None
            )

    def mark_bootstrapped(self, engine: str, session_id: str) -> None:
        with self._transaction():
            self._db.execute(
                "INSERT OR REPLACE INTO bootstraps(engine, session_id, done_at) VALUES (?, ?, ?)",
                (engine, session_id, time.time()),
            )

    def close(self) -> None:
        self._leases.release_all()
        with self._lock:
            self._db.close()


#: The body column's text, as ``json.dumps(body, ensure_ascii=False, default=str)`` writes it,
#: without building an encoder per row (one row per message the host stores).
_body_json = json_dumper()
#: The uid columns' text, as ``json.dumps(uids)`` writes it (its encoder is built per call).
_uids_json = json_dumper(ensure_ascii=True, strict=True)


def message_row_values(
    session_id: str, message: Message, digest: str, origin: str, now: float
) -> tuple[Any, ...]:
    """The column values of one transcript row, in the order both stores insert them.

    The body keeps the message without its persistence-only fields; those are stored
    in their own columns so :func:`stored_from_row` can put them back.
    """
    body = {k: v for k, v in message.items() if k not in PERSISTENCE_ONLY_FIELDS}
    absorbed = message.get("_absorbed_message_uids")
    call_uids = message.get("_tool_call_uids")
    return (
        session_id,
        message["message_uid"],
        str(body.get("role", "")),
        _body_json(body),
        digest,
        _uids_json(absorbed) if absorbed else None,
        _uids_json(call_uids) if call_uids else None,
        message.get("_tool_call_uid"),
        origin,
        now,
    )


def stored_from_row(row: Sequence[Any]) -> StoredMessage:
    """A transcript row (row_id, uid, body, digest, absorbed, call uids, call uid, origin,
    created) back into the message the host stored, persistence fields included."""
    row_id, uid, body, digest, absorbed, call_uids, call_uid, origin, created = row
    message = json.loads(body)
    message["message_uid"] = uid
    if absorbed:
        message["_absorbed_message_uids"] = json.loads(absorbed)
    if call_uids:
        message["_tool_call_uids"] = json.loads(call_uids)
    if call_uid:
        message["_tool_call_uid"] = call_uid
    return StoredMessage(int(row_id), message, digest, origin, created)


def session_from_row(row: Sequence[Any], created: bool = False) -> SessionRow:
    """A session row (the six plain columns, tools as JSON text or NULL, then optionally
    the reset flag)."""
    pending = bool(row[7]) if len(row) > 7 else False
    return SessionRow(  # type: ignore[misc, call-arg]  # mypy cannot count the splat
        *row[:6], json.loads(row[6]) if row[6] else None, created=created, reset_pending=pending
    )


class _Transaction:
    """``BEGIN IMMEDIATE`` … ``COMMIT`` under the store lock; rollback on error; re-entrant."""

    def __init__(self, db: sqlite3.Connection, lock: threading.RLock, path: Path) -> None:
        self._db = db
        self._lock = lock
        self._path = path
        self._outer = False

    def __enter__(self) -> None:
        self._lock.acquire()
        self._outer = not self._db.in_transaction
        if self._outer:
            try:
                self._db.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                self._lock.release()
                raise TranscriptStoreError(store_failure(self._path, exc)) from exc

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        try:
            if self._outer:
                try:
                    if exc_type is not None and self._db.in_transaction:
                        self._db.execute("ROLLBACK")
                    elif exc_type is None:
                        self._db.execute("COMMIT")
                except sqlite3.Error as failure:
                    if self._db.in_transaction:
                        self._db.execute("ROLLBACK")
                    raise TranscriptStoreError(store_failure(self._path, failure)) from failure
                if isinstance(exc, sqlite3.OperationalError):
                    raise TranscriptStoreError(store_failure(self._path, exc)) from exc
        finally:
            self._lock.release()


class TranscriptStoreError(RuntimeError):
    """The transcript store's file cannot be written or read; the message names the file."""


def store_failure(path: Path, exc: BaseException) -> str:
    """What went wrong with the store file at ``path`` and what to do about it."""
    text = str(exc)
    if "full" in text or getattr(exc, "errno", None) == 28:
        fix = "free disk space there, or point [store] path at another disk"
    elif "readonly" in text or "read-only" in text or isinstance(exc, PermissionError):
        fix = "make the file and its directory writable, or point [store] path elsewhere"
    else:
        fix = "check the file and its directory, or point [store] path elsewhere"
    return f"transcript store {path}: {text}; {fix}"


def __getattr__(name: str) -> object:
    # ``open_store`` moved to ``stores.backends`` (it names the PostgreSQL store too).
    return moved_attribute(__name__, name)
