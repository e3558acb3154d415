"""Two processes opening one new SQLite store race for the switch to WAL: the loser waits.

SQLite answers a journal-mode change that meets another connection's lock with "database is
locked" at once (its busy timeout does not apply), which failed a store open in CI.
"""

from __future__ import annotations

import sqlite3
import threading

import pytest

from ctxengine_host.stores.sqlite_schema import enable_wal


def test_enable_wal_waits_for_a_lock_held_by_another_connection(tmp_path):
    path = tmp_path / "new.db"
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN EXCLUSIVE")
    releaser = threading.Timer(0.3, holder.execute, ("COMMIT",))
    releaser.start()
    other = sqlite3.connect(path, isolation_level=None, timeout=0.01)
    try:
        with pytest.raises(sqlite3.OperationalError, match="locked"):
            other.execute("PRAGMA journal_mode=WAL")  # what the store did before
        enable_wal(other, timeout=5.0)
        assert other.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        releaser.join()
        other.close()
        holder.close()


def test_enable_wal_gives_up_after_its_timeout(tmp_path):
    path = tmp_path / "new.db"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    other = sqlite3.connect(path, isolation_level=None, timeout=0.01)
    try:
        with pytest.raises(sqlite3.OperationalError, match="locked"):
            enable_wal(other, timeout=0.2)
    finally:
        other.close()
        holder.execute("COMMIT")
        holder.close()
