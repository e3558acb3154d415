"""OpenAI Agents SDK session items -> Responses items.

A session's items (``await session.get_items()``) are Responses API input items; they
are read from a JSON list, JSONL, or straight from a ``SQLiteSession`` database (table
``agent_messages``, one JSON item per row, the first session unless the file holds
only one). The JavaScript SDK's items (``result.history``, its sessions) are the same
items in its own protocol (``callId``, a result as ``function_call_result``) and are
read as Responses items. Items the Responses shape here has no form for (hosted tool
calls such as ``web_search_call``) are counted in the report.

A database row's ``created_at`` (SQLite ``CURRENT_TIMESTAMP``, UTC) is its item's
``timestamp``. Models reached through the SDK's Chat Completions path may leave every
``call_id`` empty (Gemini writes ``""``): where the order of the items tells which output
answers which call (a run of calls, then their outputs in the same order), each pair gets
an id of its own, counted in the report; elsewhere such a call is refused, naming it.
"""

from __future__ import annotations

import itertools
import json
import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ...shapes.timestamps import parse_timestamp
from .base import Imported, TranscriptError, read_json_or_jsonl
from .pairing import pair_responses

SQLITE_MAGIC = b"SQLite format 3\x00"
KEPT = frozenset({"message", "reasoning", "function_call", "function_call_output"})
CALL_KINDS = ("function_call", "function_call_output")

#: The repair of calls and outputs without a call_id, as the convert report names it.
PAIRED_BY_POSITION = "tool calls without a call_id, paired with the output that follows"
#: Row times the report counts as left out.
UNREADABLE_TIME = "SQLiteSession row times that are not readable dates"


def read_path(path: Path) -> Imported:
    """Items from a SQLiteSession database or a JSON/JSONL file."""
    if path.read_bytes()[:16] == SQLITE_MAGIC:
        imported = Imported("openai-agents", "responses")
        rows = _sqlite_items(path)
        times = [_row_time(written, imported) for _, written in rows]
        return from_items([item for item, _ in rows], imported, times)
    from ..sessionfile import read_text

    items: list[Any] = []
    imported = Imported("openai-agents", "responses")
    for _, value in read_json_or_jsonl(read_text(path), "Agents SDK items", imported):
        items.extend(value if isinstance(value, list) else [value])
    return from_items(items, imported)


def _sqlite_items(path: Path) -> list[tuple[Any, Any]]:
    """(item, the row's ``created_at`` or None) of the database's one session, in order."""
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
            columns = {row[1] for row in db.execute("PRAGMA table_info(agent_messages)")}
            written = "created_at" if "created_at" in columns else "NULL"  # older schemas
            rows = db.execute(
                f"SELECT message_data, {written} FROM agent_messages WHERE session_id = ? "
                "ORDER BY id",
                (sessions[0],),
            ).fetchall()
        finally:
            db.close()
    except sqlite3.Error as exc:
        raise TranscriptError(f"not an Agents SDK SQLiteSession database: {exc}") from None
    return [(json.loads(row[0]), row[1]) for row in rows]


def _row_time(written: Any, imported: Imported) -> str | None:
    """A row's ``created_at`` (``2025-09-04 17:40:46``, UTC) as ISO 8601 UTC text."""
    if written is None:
        return None
    seconds = parse_timestamp(written)
    if seconds is None:
        imported.drop(UNREADABLE_TIME)
        return None
    return datetime.fromtimestamp(seconds, UTC).isoformat().replace("+00:00", "Z")


def _several_sessions(path: Path, sessions: list[Any]) -> str:
    """The refusal of a database of several sessions, with the way to convert each."""
    shown = ", ".join(map(repr, sessions[:5])) + (", …" if len(sessions) > 5 else "")
    return (
        f"the SQLiteSession database holds {len(sessions)} sessions ({shown}), and a session "
        "file is one conversation: convert each on its own, e.g. sqlite3 "
        f'{path} "SELECT message_data FROM agent_messages WHERE session_id = '
        f"'{sessions[0]}' ORDER BY id\" > items.jsonl, then convert items.jsonl"
    )


def from_items(
    items: list[Any], imported: Imported | None = None, times: list[str | None] | None = None
) -> Imported:
    """The messages of Agents SDK items, added to ``imported`` (what reading them left
    out already counted there) or to a new one; ``times[i]`` is item i's ``timestamp``."""
    imported = imported or Imported("openai-agents", "responses")
    kept: list[tuple[int, dict[str, Any]]] = []
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            raise TranscriptError(f"item {index}: expected a JSON object")
        item = _from_js(item, imported)
        kind = item.get("type") or ("message" if "role" in item else None)
        if kind in KEPT:
            message = {k: v for k, v in item.items() if v is not None}
            if times and times[index] is not None:
                message.setdefault("timestamp", times[index])
            kept.append((index, message))
        else:
            imported.drop(f"'{kind}' items (no function-call form)")
    _pair_by_position(kept, imported)
    imported.messages.extend(message for _, message in kept)
    pair_responses(imported)
    return imported


def _pair_by_position(kept: list[tuple[int, dict[str, Any]]], imported: Imported) -> None:
    """Calls and outputs whose ``call_id`` is empty or missing, paired by their order.

    The SDK writes a response's calls, then their outputs in the same order: a run of
    such calls (reasoning and calls with ids may come between them) followed by as many
    such outputs gives each pair an id no item uses (``call_N``), counted. Anything else
    (a call no output follows, an output no call is waiting for, a call among the outputs
    of earlier ones) cannot be told by position and is refused, naming the item.
    ``kept`` holds (item index, item) and is changed in place."""
    if not any(m.get("type") in CALL_KINDS and not m.get("call_id") for _, m in kept):
        return
    plan: dict[int, int] = {}  # position in ``kept`` of an output -> of its call
    run: list[int] = []  # positions of the current run's calls, in order
    answered = 0  # how many of them have their output
    for position, (index, message) in enumerate(kept):
        kind = message.get("type")
        without_id = kind in CALL_KINDS and not message.get("call_id")
        waiting = run[answered:]
        if kind == "function_call_output" and without_id:
            if not waiting:
                raise _unpaired(index, message, "no call without one is waiting for it")
            plan[position] = waiting[0]
            answered += 1
        elif kind == "function_call" and waiting and answered:
            raise _unpaired(*kept[waiting[0]], "another call comes before its output")
        elif kind == "function_call" and without_id:
            if not waiting:  # the run before is answered: this call starts the next
                run, answered = [], 0
            run.append(position)
        elif waiting and kind != "function_call_output" and (kind != "reasoning" or answered):
            raise _unpaired(*kept[waiting[0]], "no output follows it")
    if len(run) > answered:
        raise _unpaired(*kept[run[answered]], "no output follows it")
    taken = {message.get("call_id") for _, message in kept}
    fresh = (name for n in itertools.count(1) if (name := f"call_{n}") not in taken)
    for output, call in plan.items():
        kept[call][1]["call_id"] = kept[output][1]["call_id"] = next(fresh)
    imported.repaired[PAIRED_BY_POSITION] += len(plan)


def _unpaired(index: int, message: dict[str, Any], why: str) -> TranscriptError:
    """The refusal of a call or output without a call_id that its order cannot pair."""
    kind = message.get("type")
    what = 'with an empty call_id ("")' if "call_id" in message else "without a call_id"
    partner = "call" if kind == "function_call_output" else "output"
    return TranscriptError(
        f"item {index}: a {kind} {what}, and {why}: its {partner} cannot be told by the "
        "order of the items; give each call and its output the same call_id (any text no "
        "other item uses) in the items, then convert them (a SQLiteSession's items, one a "
        'line: sqlite3 DB "SELECT message_data FROM agent_messages ORDER BY id" > items.jsonl)'
    )


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
