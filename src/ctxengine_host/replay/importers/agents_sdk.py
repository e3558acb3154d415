"""OpenAI Agents SDK session items -> Responses items.

A session's items (``await session.get_items()``) are Responses API input items; they
are read from a JSON list, JSONL, or straight from a ``SQLiteSession`` database (table
``agent_messages``, one JSON item per row, the first session unless the file holds
only one). The JavaScript SDK's items (``result.history``, its sessions) are the same
items in its own protocol (``callId``, a result as ``function_call_result``) and are
read as Responses items. Items the Responses shape here has no form for (hosted tool
calls such as ``web_search_call``) are counted in the report.
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
    imported = Imported("openai-agents", "responses")
    for _, value in read_json_or_jsonl(read_text(path), "Agents SDK items", imported):
        items.extend(value if isinstance(value, list) else [value])
    return from_items(items, imported)


def _sqlite_items(path: Path) -> list[Any]:
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            sessions = [
                r[0]
                for r in db.execute(
                    "SELECT session_id FROM agent_messages GROUP BY session_id ORDER BY min(id)"
                )
            ]
            if not sessions:
                raise TranscriptError("the SQLiteSession database holds no items")
            if len(sessions) > 1:
                raise TranscriptError(_several_sessions(path, sessions))
            rows = db.execute(
                "SELECT message_data FROM agent_messages WHERE session_id = ? ORDER BY id",
                (sessions[0],),
            ).fetchall()
        finally:
            db.close()
    except sqlite3.Error as exc:
        raise TranscriptError(f"not an Agents SDK SQLiteSession database: {exc}") from None
    return [json.loads(row[0]) for row in rows]


def _several_sessions(path: Path, sessions: list[Any]) -> str:
    """The refusal of a database of several sessions, with the way to convert each."""
    shown = ", ".join(map(repr, sessions[:5])) + (", …" if len(sessions) > 5 else "")
    return (
        f"the SQLiteSession database holds {len(sessions)} sessions ({shown}), and a session "
        "file is one conversation: convert each on its own, e.g. sqlite3 "
        f'{path} "SELECT message_data FROM agent_messages WHERE session_id = '
        f"'{sessions[0]}' ORDER BY id\" > items.jsonl, then convert items.jsonl"
    )


def from_items(items: list[Any], imported: Imported | None = None) -> Imported:
    """The messages of Agents SDK items, added to ``imported`` (what reading them left
    out already counted there) or to a new one."""
    imported = imported or Imported("openai-agents", "responses")
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            raise TranscriptError(f"item {index}: expected a JSON object")
        item = _from_js(item, imported)
        kind = item.get("type") or ("message" if "role" in item else None)
        if kind in KEPT:
            if kind in ("function_call", "function_call_output") and not item.get("call_id"):
                raise TranscriptError(f"item {index}: a {kind} without a call_id")
            imported.messages.append({k: v for k, v in item.items() if v is not None})
        else:
            imported.drop(f"'{kind}' items (no function-call form)")
    pair_responses(imported)
    return imported


#: The JavaScript SDK's names of Responses fields.
JS_FIELDS = {"callId": "call_id"}


def _from_js(item: dict[str, Any], imported: Imported) -> dict[str, Any]:
    """A JavaScript SDK item as the Responses item it stands for: ``callId`` is
    ``call_id``, a ``function_call_result`` a ``function_call_output`` (its output the
    text the model was given); ``providerData`` has no Responses form and is left out."""
    if "callId" not in item and "providerData" not in item:
        return item
    if item.get("providerData"):
        imported.drop("providerData of JavaScript SDK items (provider metadata)")
    out = {JS_FIELDS.get(k, k): v for k, v in item.items() if k != "providerData"}
    if out.get("type") == "function_call_result":
        out = {
            "type": "function_call_output",
            "call_id": out.get("call_id"),
            "output": _js_output(out.get("output"), imported),
        }
    return out


def _js_output(output: Any, imported: Imported) -> str:
    """A JavaScript SDK tool result's text (``{"type": "text", "text"}`` or a string)."""
    if isinstance(output, str):
        return output
    if isinstance(output, dict) and output.get("type") == "text":
        return str(output.get("text", ""))
    imported.repaired["tool results that are not text, kept as JSON text"] += 1
    return json.dumps(output, ensure_ascii=False)
