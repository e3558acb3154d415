"""Per-message ``timestamp``: ISO 8601 text or epoch seconds, checked at the boundary.

The caller's value is stored as given (inside the message document) and read back
as epoch seconds where time matters (LCM's summary ranges, ``lcm_grep since/until``).
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Any

#: Epoch numbers above this are milliseconds (10^11 s is the year 5138).
MILLISECONDS_ABOVE = 1e11


def parse_timestamp(value: Any) -> float | None:
    """Epoch seconds of ``value`` (ISO 8601 text, or epoch seconds/milliseconds), else None.

    ISO text without a zone is read as UTC, so the same file means the same time on
    every machine.
    """
    if value is None or isinstance(value, bool):  # None: most messages, on every ingest
        return None
    if isinstance(value, int | float):
        number = float(value)
        if not math.isfinite(number) or number < 0:
            return None
        return number / 1000.0 if number > MILLISECONDS_ABOVE else number
    if isinstance(value, str) and value.strip():
        try:
            moment = datetime.fromisoformat(value.strip())
        except ValueError:
            return None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        return moment.timestamp()
    return None


def timestamp_problem(message: dict[str, Any]) -> str | None:
    """Why a message's ``timestamp`` cannot be read, or None (absent or readable)."""
    if "timestamp" not in message or message["timestamp"] is None:
        return None
    if parse_timestamp(message["timestamp"]) is None:
        return (
            f"'timestamp' {message['timestamp']!r} is neither ISO 8601 text "
            "(2026-01-31T12:00:00Z) nor non-negative epoch seconds"
        )
    return None


def message_time(message: dict[str, Any]) -> float | None:
    """The epoch seconds a message says it was written at, or None."""
    return parse_timestamp(message.get("timestamp"))
