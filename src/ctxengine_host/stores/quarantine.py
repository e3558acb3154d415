"""Quarantine records: which engine failed, in which method, why, when, in which process.

Records are appended as JSON lines to one file shared by every process using
the same data directory, so ``ctxengine doctor`` in another process sees them.
A quarantine lasts for the process that recorded it; the record outlives it.
Appends are serialized across processes by a ``filelock`` lock file next to the log
(``flock`` on POSIX, ``msvcrt`` on Windows: nothing here needs ``fcntl``).
"""

from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Protocol

from filelock import FileLock

from ..jsonl import jsonl_lines
from ..paths import user_data_dir

QUARANTINE_FILE_ENV = "CTXENGINE_QUARANTINE_FILE"


@dataclass(frozen=True)
class QuarantineRecord:
    engine: str
    method: str
    reason: str
    time: float
    pid: int


def default_quarantine_path() -> Path:
    """``CTXENGINE_QUARANTINE_FILE`` or ``<data dir>/quarantine.jsonl``."""
    override = os.environ.get(QUARANTINE_FILE_ENV)
    return Path(override).expanduser() if override else user_data_dir() / "quarantine.jsonl"


class QuarantineSink(Protocol):
    """Where resolution and the engine guard record a quarantine (a log, or a collector)."""

    def record(self, engine: str, method: str, reason: str, /) -> object: ...


class QuarantineLog:
    """Appends and reads quarantine records; safe across threads and processes."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or default_quarantine_path()
        self._lock = threading.Lock()

    def record(self, engine: str, method: str, reason: str) -> QuarantineRecord:
        """Append one record and return it."""
        rec = QuarantineRecord(engine, method, reason[:2000], time.time(), os.getpid())
        line = json.dumps(asdict(rec)) + "\n"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        file_lock = FileLock(self.path.with_name(self.path.name + ".lock"), thread_local=False)
        with self._lock, file_lock, open(self.path, "a", encoding="utf-8") as fh:
            fh.write(line)
            fh.flush()
        return rec

    def records(self, engine: str | None = None) -> list[QuarantineRecord]:
        """All records (optionally of one engine), oldest first; unreadable lines skipped."""
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        out = []
        for line in jsonl_lines(text):
            try:
                rec = QuarantineRecord(**json.loads(line))
            except (ValueError, TypeError):
                continue
            if engine is None or rec.engine == engine:
                out.append(rec)
        return out

    def clear(self) -> None:
        """Forget every record (``ctxengine doctor --clear-quarantine``)."""
        self.path.unlink(missing_ok=True)
