"""Schema versions of the SQLite stores: an ordered list of upgrade steps, applied on open.

Every SQLite store (the transcript store, the LCM store) keeps its version in its
``meta`` table (``schema_version``). ``steps[i]`` takes a file from version ``i`` to
``i + 1``; a store appends a step for every change of its stored data, never edits an
old one. Opening a file runs the missing steps in one ``BEGIN IMMEDIATE`` transaction:
another process opening the same file waits, then finds it current; a crash mid-upgrade
leaves the old version. A step is SQL text (several statements, triggers included) or a
function of the connection, for upgrades that compute values in Python. (PostgreSQL
schemas have the same shape, :class:`ctxengine_host.stores.pg.Schema`, applied by
``ctxengine migrate``.)
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass

Step = str | Callable[[sqlite3.Connection], None]


class SchemaTooNew(RuntimeError):
    """The file was written by a newer ctxengine than this one."""


@dataclass(frozen=True)
class SqliteSchema:
    """One store's schema: ``steps[i]`` upgrades version i to i + 1."""

    component: str
    steps: tuple[Step, ...]

    @property
    def latest(self) -> int:
        return len(self.steps)


def statements(script: str) -> list[str]:
    """The complete statements of ``script`` (``executescript`` would commit the caller's
    transaction; these run inside it one by one)."""
    out: list[str] = []
    pending = ""
    for part in script.split(";"):
        pending += part + ";"
        if sqlite3.complete_statement(pending):
            if pending.strip(" \n\t;"):
                out.append(pending.strip())
            pending = ""
    return out


def stored_version(conn: sqlite3.Connection) -> int:
    """The file's ``schema_version`` (0: a new file, no ``meta`` table yet)."""
    has_meta = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type='table' AND name='meta'"
    ).fetchone()
    if has_meta is None:
        return 0
    row = conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
    return int(row[0]) if row is not None else 0


def upgrade(conn: sqlite3.Connection, schema: SqliteSchema, location: str) -> tuple[int, int]:
    """Bring the file to ``schema.latest`` in one transaction; returns (before, after).

    ``conn`` must be in autocommit mode (``isolation_level=None``).
    """
    if stored_version(conn) == schema.latest:  # the common case: no write lock taken
        return schema.latest, schema.latest
    conn.execute("BEGIN IMMEDIATE")
    try:
        before = stored_version(conn)
        if before > schema.latest:
            raise SchemaTooNew(
                f"{schema.component} store {location} has schema version {before}, newer than "
                f"this ctxengine ({schema.latest}); upgrade ctxengine or use another file"
            )
        for step in schema.steps[before:]:
            if callable(step):
                step(conn)
            else:
                for statement in statements(step):
                    conn.execute(statement)
        if before < schema.latest:
            conn.execute(
                "INSERT INTO meta(key, value) VALUES ('schema_version', ?) "
                "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (str(schema.latest),),
            )
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
    return before, schema.latest


#: WAL written between automatic checkpoints (SQLite's default is 1,000 pages: 4 MB of
#: 4 KiB pages). A store commits often (every message or turn) and each commit rewrites the
#: same index pages; a checkpoint copies each page back once however often it changed, so
#: checkpoints ten times rarer copy far less (docs/performance.md).
WAL_CHECKPOINT_BYTES = 40_960_000


def checkpoint_every(db: sqlite3.Connection, wal_bytes: int = WAL_CHECKPOINT_BYTES) -> None:
    """Checkpoint automatically every ``wal_bytes`` of WAL (SQLite counts pages: as many as
    make that at this file's page size)."""
    (page_bytes,) = db.execute("PRAGMA page_size").fetchone()
    db.execute(f"PRAGMA wal_autocheckpoint={wal_bytes // page_bytes}")


def enable_wal(db: sqlite3.Connection, timeout: float) -> None:
    """Switch a store file to WAL. Two processes opening the same new file race for the
    switch, and SQLite answers the loser "database is locked" at once (its busy timeout
    does not apply to a journal-mode change): retry for up to ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            db.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() >= deadline:
                raise
            time.sleep(0.05)
