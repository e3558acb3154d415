"""Quarantine records in PostgreSQL, shared by every host process of one deployment.

Used instead of the JSON-lines file when ``[store] url`` is a PostgreSQL URL, so
``ctxengine doctor`` on any worker sees what failed on the others. Same interface as
:class:`~ctxengine_host.stores.quarantine.QuarantineLog`.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from ..contract.messages import well_formed_text
from .pg import open_checked, parse_url, read, transaction
from .pg_schemas import QUARANTINE_SCHEMA
from .quarantine import QuarantineLog, QuarantineRecord


class PgQuarantineLog:
    """Appends and reads quarantine records in the deployment's database."""

    def __init__(self, url: str) -> None:
        self.target = parse_url(url)
        self.path = self.target.label  # what doctor shows as the log's location
        self._pool = open_checked(self.target, QUARANTINE_SCHEMA)

    def record(self, engine: str, method: str, reason: str) -> QuarantineRecord:
        """Append a record. The reason is an engine's error message, which often quotes
        the input it failed on: NUL and half characters, which PostgreSQL's text cannot
        hold, are kept as U+FFFD."""
        reason = well_formed_text(reason[:2000]).replace("\x00", "\ufffd")
        rec = QuarantineRecord(engine, method, reason, time.time(), os.getpid())
        with transaction(self._pool, self.target, "recording a quarantine") as conn:
            conn.execute(
                "INSERT INTO quarantine_records(engine, method, reason, time, pid, host)"
                " VALUES (%s, %s, %s, %s, %s, %s)",
                (rec.engine, rec.method, rec.reason, rec.time, rec.pid, os.uname().nodename),
            )
        return rec

    def records(self, engine: str | None = None) -> list[QuarantineRecord]:
        rows = read(
            self._pool,
            self.target,
            "reading quarantine records",
            "SELECT engine, method, reason, time, pid FROM quarantine_records"
            " WHERE %s::text IS NULL OR engine = %s ORDER BY id",
            (engine, engine),
        )
        return [QuarantineRecord(*r) for r in rows]

    def clear(self) -> None:
        with transaction(self._pool, self.target, "clearing quarantine records") as conn:
            conn.execute("DELETE FROM quarantine_records")


def quarantine_log_for(store_url: str | Path | None) -> QuarantineLog | PgQuarantineLog:
    """The database-backed log when the transcript store is PostgreSQL, else the file."""
    from .pg import is_postgres_url

    if is_postgres_url(str(store_url or "")):
        return PgQuarantineLog(str(store_url))
    return QuarantineLog()
