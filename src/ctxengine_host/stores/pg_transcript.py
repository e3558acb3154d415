"""The PostgreSQL transcript store: the :class:`~ctxengine_host.stores.transcript.TranscriptStore`
protocol for many host processes sharing one database.

A session is leased by one process at a time: ``open_session`` takes a session-level
advisory lock on a dedicated connection (released by ``end``, ``close``, or the
server when the process dies) and bumps the session's ``lease_epoch``. Every write
locks the session row and checks the epoch, so a process that lost its lease can
never write into a session another process has resumed. An exact retry of an
``append_live`` (same position, same ``message_uid`` and digest) is a no-op.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Sequence
from typing import Any

from ..faults import fault_point
from .pg import (
    PgTarget,
    advisory_key,
    connect,
    open_checked,
    parse_url,
    read,
    transaction,
)
from .pg_schemas import TRANSCRIPT_SCHEMA
from .transcript import (
    Message,
    SessionBusy,
    SessionRow,
    StoredMessage,
    lease_timeout_seconds,
    message_row_values,
    session_from_row,
    stored_from_row,
)

LEASE_TIMEOUT_ENV = "CTXENGINE_PG_LEASE_TIMEOUT"
_LEASE_POLL_SECONDS = 0.02


_ROW_COLUMNS = (
    "m.row_id, m.message_uid, m.body, m.digest, m.absorbed_message_uids, m.tool_call_uids,"
    " m.tool_call_uid, m.origin, m.created_at"
)
_SESSION_COLUMNS = (
    "session_id, parent_session_id, created_at, ended_at, turn_index, system_prompt, tools,"
    " reset_pending"
)


class SessionTakenOver(RuntimeError):
    """Another process resumed this session after this one lost its lease."""


class PostgresTranscriptStore:
    """Transcripts in PostgreSQL; thread-safe, and safe across processes per session."""

    def __init__(self, url: str, *, lease_timeout: float | None = None) -> None:
        self.target: PgTarget = parse_url(url)
        self.location = self.target.label
        self._pool = open_checked(self.target, TRANSCRIPT_SCHEMA)
        (self.store_id,) = self._read(
            "reading the store id", "SELECT value FROM transcript_meta WHERE key = 'store_id'"
        )[0]
        self._lease_timeout = (
            lease_timeout
            if lease_timeout is not None
            else float(os.environ.get(LEASE_TIMEOUT_ENV) or lease_timeout_seconds())
        )
        self._lease_lock = threading.Lock()
        self._lease_conn: Any = None
        #: Session id → the lease epoch this store holds.
        self._epochs: dict[str, int] = {}

    def _read(self, what: str, sql: str, params: Any = ()) -> list[tuple]:
        return read(self._pool, self.target, what, sql, params)

    # Leases.

    def _lease_key(self, session_id: str) -> int:
        return advisory_key(self.target.namespace, "transcript-session", session_id)

    def _acquire_lease(self, session_id: str) -> None:
        with self._lease_lock:
            if session_id in self._epochs:
                return
            if self._lease_conn is None or self._lease_conn.closed:
                self._lease_conn = connect(self.target, autocommit=True)
            deadline = time.monotonic() + self._lease_timeout
            key = self._lease_key(session_id)
            while not self._lease_conn.execute(
                "SELECT pg_try_advisory_lock(%s)", (key,)
            ).fetchone()[0]:
                if time.monotonic() >= deadline:
                    raise SessionBusy(
                        f"session {session_id!r} is open in another process on "
                        f"{self.location} (waited {self._lease_timeout:g}s); end it there, or "
                        f"raise {LEASE_TIMEOUT_ENV}"
                    )
                time.sleep(_LEASE_POLL_SECONDS)
            self._epochs[session_id] = -1  # held; the epoch is set by open_session

    def _release_lease(self, session_id: str) -> None:
        with self._lease_lock:
            if self._epochs.pop(session_id, None) is None:
                return
            if self._lease_conn is not None and not self._lease_conn.closed:
                try:
                    self._lease_conn.execute(
                        "SELECT pg_advisory_unlock(%s)", (self._lease_key(session_id),)
                    )
                except Exception:  # the connection died: the server released the lock
                    self._lease_conn.close()

    def _fence(self, conn: Any, session_id: str) -> None:
        """Lock the session row; refuse to write if another process took the session over."""
        row = conn.execute(
            "SELECT lease_epoch FROM transcript_sessions WHERE session_id = %s FOR UPDATE",
            (session_id,),
        ).fetchone()
        mine = self._epochs.get(session_id)
        if row is not None and mine is not None and mine >= 0 and row[0] != mine:
            raise SessionTakenOver(
                f"session {session_id!r} was resumed by another process on {self.location}; "
                "this process lost it (reopen the session to continue here)"
            )

    # Sessions.

    def open_session(
        self,
        session_id: str,
        *,
        parent_session_id: str | None = None,
        system_prompt: str | None = None,
        tools: list[dict[str, Any]] | None = None,
    ) -> SessionRow:
        self._acquire_lease(session_id)
        fault_point("host.lease.acquired")
        try:
            return self._open_session(session_id, parent_session_id, system_prompt, tools)
        except BaseException:
            self._release_lease(session_id)
            raise

    def _open_session(
        self,
        session_id: str,
        parent_session_id: str | None,
        system_prompt: str | None,
        tools: list[dict[str, Any]] | None,
    ) -> SessionRow:
        now = time.time()
        tools_text = json.dumps(tools) if tools is not None else None
        with transaction(self._pool, self.target, f"opening session {session_id!r}") as conn:
            created = conn.execute(
                "INSERT INTO transcript_sessions(session_id, parent_session_id, created_at,"
                " updated_at, system_prompt, tools) VALUES (%s, %s, %s, %s, %s, %s)"
                " ON CONFLICT (session_id) DO NOTHING RETURNING session_id",
                (session_id, parent_session_id, now, now, system_prompt, tools_text),
            ).fetchone()
            row = conn.execute(
                "UPDATE transcript_sessions SET lease_epoch = lease_epoch + 1, updated_at = %s,"
                " ended_at = NULL, system_prompt = COALESCE(%s, system_prompt),"
                " tools = COALESCE(%s, tools) WHERE session_id = %s"
                f" RETURNING lease_epoch, {_SESSION_COLUMNS}",
                (now, system_prompt, tools_text, session_id),
            ).fetchone()
        self._epochs[session_id] = row[0]
        return session_from_row(row[1:], created=created is not None)

    def get_session(self, session_id: str) -> SessionRow | None:
        rows = self._read(
            "reading a session",
            f"SELECT {_SESSION_COLUMNS} FROM transcript_sessions WHERE session_id = %s",
            (session_id,),
        )
        return session_from_row(rows[0]) if rows else None

    def update_session(
        self, session_id: str, *, turn_index: int | None = None, ended: bool | None = None
    ) -> None:
        now = time.time()
        with transaction(self._pool, self.target, f"updating session {session_id!r}") as conn:
            self._fence(conn, session_id)
            if turn_index is not None:
                conn.execute(
                    "UPDATE transcript_sessions SET turn_index = %s, updated_at = %s"
                    " WHERE session_id = %s",
                    (turn_index, now, session_id),
                )
            if ended is not None:
                conn.execute(
                    "UPDATE transcript_sessions SET ended_at = %s, updated_at = %s"
                    " WHERE session_id = %s",
                    (now if ended else None, now, session_id),
                )
        if ended:
            self._release_lease(session_id)

    def session_ids(self) -> list[str]:
        rows = self._read(
            "listing sessions", "SELECT session_id FROM transcript_sessions ORDER BY 1"
        )
        return [r[0] for r in rows]

    # Messages and the live view.

    def _insert(
        self, conn: Any, session_id: str, rows: Sequence[tuple[Message, str, str]]
    ) -> list[int]:
        now = time.time()
        params = []
        for message, digest, origin in rows:
            params.append(message_row_values(session_id, message, digest, origin, now))
        if not params:
            return []
        cur = conn.cursor()
        cur.executemany(
            "INSERT INTO transcript_messages(session_id, message_uid, role, body, digest,"
            " absorbed_message_uids, tool_call_uids, tool_call_uid, origin, created_at)"
            " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s) RETURNING row_id",
            params,
            returning=True,
        )
        ids = []
        while True:
            ids.append(int(cur.fetchone()[0]))
            if not cur.nextset():
                break
        return ids

    def insert_rows(self, session_id: str, rows: Sequence[tuple[Message, str, str]]) -> list[int]:
        """Write rows without touching the live view."""
        with transaction(self._pool, self.target, f"storing rows of {session_id!r}") as conn:
            self._fence(conn, session_id)
            return self._insert(conn, session_id, rows)

    def append_live(
        self, session_id: str, rows: Sequence[tuple[Message, str, str]], start_position: int
    ) -> list[int]:
        """Write rows and append them to the live view at ``start_position``, in one commit.

        A retry of a write that did commit (the connection broke before the reply) finds
        the same uids and digests at those positions and returns their row ids unchanged.
        """
        what = f"appending to session {session_id!r}"
        with transaction(self._pool, self.target, what) as conn:
            self._fence(conn, session_id)
            existing = conn.execute(
                "SELECT l.row_id, m.message_uid, m.digest FROM transcript_live l"
                " JOIN transcript_messages m ON m.row_id = l.row_id"
                " WHERE l.session_id = %s AND l.position >= %s AND l.position < %s"
                " ORDER BY l.position",
                (session_id, start_position, start_position + len(rows)),
            ).fetchall()
            wanted = [(m.get("message_uid"), d) for m, d, _ in rows]
            if rows and [(uid, digest) for _, uid, digest in existing] == wanted:
                return [int(r[0]) for r in existing]
            ids = self._insert(conn, session_id, rows)
            fault_point("store.append_live.mid_transaction")
            conn.cursor().executemany(
                "INSERT INTO transcript_live(session_id, position, row_id) VALUES (%s, %s, %s)"
                " ON CONFLICT (session_id, position) DO UPDATE SET row_id = EXCLUDED.row_id",
                [(session_id, start_position + i, row_id) for i, row_id in enumerate(ids)],
            )
            return ids

    def replace_live(self, session_id: str, row_ids: Sequence[int]) -> None:
        """Point the live view at ``row_ids`` (rows stay)."""
        with transaction(self._pool, self.target, f"replacing live view of {session_id!r}") as c:
            self._fence(c, session_id)
            c.execute("DELETE FROM transcript_live WHERE session_id = %s", (session_id,))
            if row_ids:
                c.execute(
                    "INSERT INTO transcript_live(session_id, position, row_id)"
                    " SELECT %s, ord - 1, rid FROM unnest(%s::bigint[]) WITH ORDINALITY"
                    " AS t(rid, ord)",
                    (session_id, list(row_ids)),
                )

    def begin_reset(self, session_id: str) -> None:
        with transaction(self._pool, self.target, f"resetting session {session_id!r}") as c:
            self._fence(c, session_id)
            c.execute(
                "UPDATE transcript_sessions SET reset_pending = TRUE WHERE session_id = %s",
                (session_id,),
            )

    def finish_reset(self, session_id: str) -> None:
        with transaction(self._pool, self.target, f"resetting session {session_id!r}") as c:
            self._fence(c, session_id)
            c.execute("DELETE FROM transcript_live WHERE session_id = %s", (session_id,))
            fault_point("store.finish_reset.mid_transaction")
            c.execute(
                "UPDATE transcript_sessions SET reset_pending = FALSE WHERE session_id = %s",
                (session_id,),
            )

    def holds_message(self, session_id: str, message_uid: str) -> bool:
        return bool(
            self._read(
                "looking up a message",
                "SELECT 1 FROM transcript_messages WHERE message_uid = %s AND session_id = %s"
                " LIMIT 1",
                (message_uid, session_id),
            )
        )

    def live(self, session_id: str) -> list[StoredMessage]:
        rows = self._read(
            "reading a live view",
            f"SELECT {_ROW_COLUMNS} FROM transcript_live l"
            " JOIN transcript_messages m ON m.row_id = l.row_id"
            " WHERE l.session_id = %s ORDER BY l.position",
            (session_id,),
        )
        return [stored_from_row(r) for r in rows]

    def rows(self, session_id: str) -> list[StoredMessage]:
        rows = self._read(
            "reading rows",
            f"SELECT {_ROW_COLUMNS} FROM transcript_messages m WHERE m.session_id = %s"
            " ORDER BY m.row_id",
            (session_id,),
        )
        return [stored_from_row(r) for r in rows]

    def count_rows(self, session_id: str) -> int:
        rows = self._read(
            "counting rows",
            "SELECT COUNT(*) FROM transcript_messages WHERE session_id = %s",
            (session_id,),
        )
        return int(rows[0][0])

    # Bootstrap records.

    def is_bootstrapped(self, engine: str, session_id: str) -> bool:
        return bool(
            self._read(
                "reading bootstrap records",
                "SELECT 1 FROM transcript_bootstraps WHERE engine = %s AND session_id = %s",
                (engine, session_id),
            )
        )

    def mark_bootstrapped(self, engine: str, session_id: str) -> None:
        with transaction(self._pool, self.target, "recording a bootstrap") as conn:
            conn.execute(
                "INSERT INTO transcript_bootstraps(engine, session_id, done_at)"
                " VALUES (%s, %s, %s) ON CONFLICT (engine, session_id)"
                " DO UPDATE SET done_at = EXCLUDED.done_at",
                (engine, session_id, time.time()),
            )

    def close(self) -> None:
        """Release every lease (the shared pool stays for other stores of this process)."""
        with self._lease_lock:
            self._epochs.clear()
            if self._lease_conn is not None:
                self._lease_conn.close()
                self._lease_conn = None
