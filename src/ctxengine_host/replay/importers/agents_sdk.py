"""OpenAI Agents SDK session items -> Responses items.

A session's items (``await session.get_items()``) are Responses API input items; they
are read from a JSON list, JSONL, or straight from a ``SQLiteSession`` database (table
``agent_messages``, one JSON item per row, the first session unless the file holds
only one). Items the Responses shape here has no form for (hosted tool calls such as
``web_search_call``) are counted in the report.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from .base import Imported, TranscriptError, read_json_or_jsonl
from .pairing import pair_responses

SQLITE_MAGIC = b"SQLite format 3\x00"
KEPT = frozenset({"message", "reasoning", "function_call", "function_call_output"})


def read_path(path: Path) -> Imported:
    """Items from a SQLiteSession database or a JSON/JSONL file."""
    if path.read_bytes()[:16] == SQLITE_MAGIC:
        return from_items(_sqlite_items(path))
    from ..sessionfile import read_text

    items: list[Any] = []
    for _, value in read_json_or_jsonl(read_text(path), "Agents SDK items"):
        items.extend(value if isinstance(value, list) else [value])
    return from_items(items)


def _sqlite_items(path: Path) -> list[Any]:
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            sessions = [r[0] for r in db.execute("SELECT DISTINCT session_id FROM agent_messages")]
            if not sessions:
                raise TranscriptError("the SQLiteSession database holds no items")
            rows = db.execute(
                "SELECT message_data FROM agent_messages WHERE session_id = ? ORDER BY id",
                (sorted(sessions)[0],),
            ).fetchall()
        finally:
            db.close()
    except sqlite3.Error as exc:
        raise TranscriptError(f"not an Agents SDK SQLiteSession database: {exc}") from None
    return [json.loads(row[0]) for row in rows]


def from_items(items: list[Any]) -> Imported:
    imported = Imported("openai-agents", "responses")
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            raise TranscriptError(f"item {index}: expected a JSON object")
        kind = item.get("type") or ("message" if "role" in item else None)
        if kind in KEPT:
            imported.messages.append({k: v for k, v in item.items() if v is not None})
        else:
            imported.drop(f"'{kind}' items (no function-call form)")
    pair_responses(imported)
    return imported
