"""Codex CLI rollout JSONL (``~/.codex/sessions/…/rollout-*.jsonl``) -> Responses items.

Each line is ``{"timestamp", "type", "payload"}``; ``response_item`` payloads are what
Codex sent and received (Responses API items) and are kept with the line's timestamp.
``session_meta``, ``turn_context`` and ``event_msg`` lines describe the UI and the run,
``compacted`` lines Codex's own compaction: none of them is a message, and the report
counts them. Older rollouts (a first line ``{"id", "timestamp", "instructions"}``, then
bare items, ``record_type`` state lines) are read too, and so is the TypeScript CLI's
(``rollout-*.json``, one document ``{"session": {…}, "items": [...]}``).
"""

from __future__ import annotations

import json
from typing import Any

from .base import Imported, TranscriptError, read_json_or_jsonl
from .pairing import pair_responses

KEPT = frozenset({"message", "reasoning", "function_call", "function_call_output"})


def read(text: str) -> Imported:
    imported = Imported("codex", "responses")
    records = read_json_or_jsonl(text, "Codex rollout")
    document = records[0][1] if len(records) == 1 else None
    if isinstance(document, dict) and isinstance(document.get("items"), list):
        # The TypeScript CLI's rollout (0.1.x, spring 2025): one {"session", "items"} JSON.
        imported.drop("rollout metadata and state lines")
        records = [(1, item) for item in document["items"]]
    for line, value in records:
        if not isinstance(value, dict):
            raise TranscriptError(f"line {line}: expected a JSON object")
        if "payload" in value and "type" in value:
            if value["type"] != "response_item":
                imported.drop(f"'{value['type']}' lines (run metadata and UI events)")
                continue
            item, stamp = value["payload"], value.get("timestamp")
        elif "record_type" in value or ("instructions" in value and "type" not in value):
            imported.drop("rollout metadata and state lines")
            continue
        else:
            item, stamp = value, value.get("timestamp")
        converted = _item(item, imported, line)
        if converted is not None:
            if stamp is not None:
                converted["timestamp"] = stamp
            imported.messages.append(converted)
    pair_responses(imported)
    return imported


def _item(item: Any, imported: Imported, line: int) -> dict[str, Any] | None:
    if not isinstance(item, dict):
        raise TranscriptError(f"line {line}: a response item is not an object")
    kind = item.get("type")
    if kind in KEPT:
        out = {k: v for k, v in item.items() if v is not None}
        if kind == "function_call_output" and not isinstance(out.get("output"), str | list):
            out["output"] = _output_text(out.get("output"))
        return out
    if kind == "custom_tool_call":
        return {
            "type": "function_call",
            "call_id": item.get("call_id"),
            "name": item.get("name", ""),
            "arguments": json.dumps({"input": item.get("input", "")}),
        }
    if kind == "custom_tool_call_output":
        return {
            "type": "function_call_output",
            "call_id": item.get("call_id"),
            "output": _output_text(item.get("output")),
        }
    if kind == "local_shell_call":
        return {
            "type": "function_call",
            "call_id": item.get("call_id") or item.get("id"),
            "name": "local_shell",
            "arguments": json.dumps(item.get("action") or {}),
        }
    imported.drop(f"'{kind}' items (no function-call form)")
    return None


def _output_text(output: Any) -> str:
    """A tool output as text: Codex writes a string, or an object with ``content``."""
    if isinstance(output, str):
        return output
    if isinstance(output, dict) and isinstance(output.get("content"), str):
        return output["content"]
    return json.dumps(output, ensure_ascii=False)
