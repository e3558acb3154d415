"""Codex CLI rollout JSONL (``~/.codex/sessions/…/rollout-*.jsonl``) -> Responses items.

Each line is ``{"timestamp", "type", "payload"}``; ``response_item`` payloads are what
Codex sent and received (Responses API items) and are kept with the line's timestamp.
``session_meta``, ``turn_context`` and ``event_msg`` lines describe the UI and the run,
``compacted`` lines Codex's own compaction: none of them is a message, and the report
counts them; but the system prompt newer rollouts record in ``session_meta``
(``base_instructions``, sent as every request's ``instructions``) leads the session as a
system message. A ``thread_rolled_back`` event discards the newest turns as Codex does: the
items from the start of the ``num_turns``-th last user turn on (a user message that is
not context Codex added: environment, instructions, an abort notice), with the context
updates sent just before it (Codex sends them again after a rollback). Older rollouts
(a first line ``{"id", "timestamp", "instructions"}``, then bare items, ``record_type``
state lines) are read too, and so is the TypeScript CLI's (``rollout-*.json``, one
document ``{"session": {…}, "items": [...]}``). A tool's output keeps its content parts
(text, images) when Codex wrote it as a list, for custom tools too.
"""

from __future__ import annotations

import json
from typing import Any

from .base import Imported, TranscriptError, read_json_or_jsonl
from .pairing import pair_responses

KEPT = frozenset({"message", "reasoning", "function_call", "function_call_output"})


def read(text: str) -> Imported:
    imported = Imported("codex", "responses")
    records = read_json_or_jsonl(text, "Codex rollout", imported)
    document = records[0][1] if len(records) == 1 else None
    if isinstance(document, dict) and isinstance(document.get("items"), list):
        # The TypeScript CLI's rollout (0.1.x, spring 2025): one {"session", "items"} JSON.
        imported.drop("rollout metadata and state lines")
        records = [(1, item) for item in document["items"]]
    instructions: dict[str, Any] | None = None
    for line, value in records:
        if not isinstance(value, dict):
            raise TranscriptError(f"line {line}: expected a JSON object")
        if "payload" in value and "type" in value:
            if value["type"] != "response_item":
                imported.drop(f"'{value['type']}' lines (run metadata and UI events)")
                payload = value["payload"]
                if isinstance(payload, dict) and payload.get("type") == "thread_rolled_back":
                    _roll_back(imported, payload.get("num_turns"))
                if value["type"] == "session_meta" and instructions is None:
                    instructions = _base_instructions(payload, value.get("timestamp"))
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
    if instructions is not None:
        imported.messages.insert(0, instructions)
    pair_responses(imported)
    return imported


def _base_instructions(payload: Any, stamp: Any) -> dict[str, Any] | None:
    """The system prompt Codex sends with every request (``instructions``), which newer
    rollouts (0.12x) record only in ``session_meta.base_instructions``: a leading system
    message, or None where the line has none."""
    base = payload.get("base_instructions") if isinstance(payload, dict) else None
    text = base.get("text") if isinstance(base, dict) else base
    if not isinstance(text, str) or not text.strip():
        return None
    message: dict[str, Any] = {
        "type": "message",
        "role": "system",
        "content": [{"type": "input_text", "text": text}],
    }
    if stamp is not None:
        message["timestamp"] = stamp
    return message


def _item(item: Any, imported: Imported, line: int) -> dict[str, Any] | None:
    if not isinstance(item, dict):
        raise TranscriptError(f"line {line}: a response item is not an object")
    kind = item.get("type")
    if kind in KEPT:
        out = {k: v for k, v in item.items() if v is not None}
        if kind == "function_call_output":
            out["output"] = _output(out.get("output"))
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
            "output": _output(item.get("output")),
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


#: How the user messages Codex adds as context begin (not a turn the user started).
_CONTEXT_OPENINGS = (
    "<environment_context>", "<user_instructions>", "<turn_aborted>", "<user_shell_command>",
    "<subagent_notification>", "<skill>", "# AGENTS.md instructions",
)  # fmt: skip


def _roll_back(imported: Imported, num_turns: Any) -> None:
    """Discard the newest ``num_turns`` user turns (``thread_rolled_back``), counted."""
    if isinstance(num_turns, bool) or not isinstance(num_turns, int) or num_turns <= 0:
        return
    messages = imported.messages
    starts = [n for n, item in enumerate(messages) if _user_turn(item)]
    if not starts:
        return
    cut = starts[max(0, len(starts) - num_turns)]
    while cut > 0 and _context_update(messages[cut - 1]):
        cut -= 1
    imported.drop(
        "items of turns the user rolled back (Codex thread rollback)", len(messages) - cut
    )
    del messages[cut:]


def _user_turn(item: dict[str, Any]) -> bool:
    """Whether ``item`` starts a user turn: a user message that is not added context."""
    return (
        item.get("type") == "message" and item.get("role") == "user" and not _context_update(item)
    )


def _context_update(item: dict[str, Any]) -> bool:
    """Whether ``item`` is context Codex sends with a turn: a developer or system message,
    or a user message every text part of which is a context block."""
    if item.get("type") != "message":
        return False
    if item.get("role") in ("developer", "system"):
        return True
    content = item.get("content")
    texts = [content] if isinstance(content, str) else [
        p.get("text") for p in content or () if isinstance(p, dict)
    ]  # fmt: skip
    return (
        item.get("role") == "user"
        and bool(texts)
        and all(isinstance(t, str) and t.lstrip().startswith(_CONTEXT_OPENINGS) for t in texts)
    )


def _output(output: Any) -> str | list[Any]:
    """A tool output as Codex wrote it when it is text or a list of content parts (text
    and images stay parts), else as text."""
    return output if isinstance(output, str | list) else _output_text(output)


def _output_text(output: Any) -> str:
    """A tool output as text: Codex writes a string, or an object with ``content``."""
    if isinstance(output, str):
        return output
    if isinstance(output, dict) and isinstance(output.get("content"), str):
        return output["content"]
    return json.dumps(output, ensure_ascii=False)
