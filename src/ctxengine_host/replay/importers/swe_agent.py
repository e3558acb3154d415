"""mini-swe-agent and SWE-agent trajectories -> Chat (or Responses) messages.

mini-swe-agent (``trajectory_format`` ``mini-swe-agent-1.x``): ``messages`` are Chat
messages with an ``extra`` dict (actions, cost, ``timestamp``); the final ``exit``
message is the run's outcome, not something the model saw. Its Responses-API mode
stores response objects (``{"object": "response", "output": [...]}``) and items.

SWE-agent (``.traj``): ``history`` holds Chat-like messages with ``agent``,
``message_type``, ``thought``, ``action``; tool results name their calls in
``tool_call_ids``.
"""

from __future__ import annotations

import json
from typing import Any

from .base import Imported, TranscriptError, text_of
from .pairing import pair_chat, pair_responses

CHAT_FIELDS = ("role", "content", "tool_calls", "tool_call_id", "name")
#: Fields of a trajectory message that are read (the rest are reported).
_READ_FIELDS = frozenset({*CHAT_FIELDS, "extra", "timestamp", "tool_call_ids"})
#: SWE-agent's bookkeeping fields, reported together.
_BOOKKEEPING = ("agent", "message_type", "thought", "action")


def read_mini(text: str) -> Imported:
    data = _document(text, "mini-swe-agent trajectory")
    messages = data.get("messages")
    if not isinstance(messages, list):
        raise TranscriptError("a mini-swe-agent trajectory has a 'messages' list; this has none")
    if any(
        isinstance(m, dict) and (m.get("object") == "response" or "type" in m) for m in messages
    ):
        return _mini_responses(messages)
    imported = Imported("mini-swe-agent", "chat")
    for message in messages:
        if not isinstance(message, dict):
            raise TranscriptError("a trajectory message is not an object")
        if message.get("role") == "exit":
            imported.drop("exit records (the run's outcome, not sent to the model)")
            continue
        imported.messages.append(_chat(message, imported, message.get("extra")))
    pair_chat(imported)
    return imported


def _mini_responses(messages: list[Any]) -> Imported:
    imported = Imported("mini-swe-agent", "responses")
    for message in messages:
        if not isinstance(message, dict):
            continue
        extra: dict[str, Any] = message["extra"] if isinstance(message.get("extra"), dict) else {}
        if message.get("role") == "exit":
            imported.drop("exit records (the run's outcome, not sent to the model)")
        elif message.get("object") == "response":
            for item in message.get("output") or ():
                imported.messages.append(_stamped(dict(item), extra))
        else:
            item = {k: v for k, v in message.items() if k != "extra"}
            imported.messages.append(_stamped(item, extra))
        if extra:
            imported.drop("mini-swe-agent 'extra' records (actions, cost)")
    pair_responses(imported)
    return imported


def read_swe_agent(text: str) -> Imported:
    data = _document(text, "SWE-agent trajectory")
    history = data.get("history")
    if not isinstance(history, list):
        raise TranscriptError("a SWE-agent .traj has a 'history' list; this has none")
    imported = Imported("swe-agent", "chat")
    for message in history:
        if not isinstance(message, dict):
            raise TranscriptError("a history entry is not an object")
        ids = message.get("tool_call_ids")
        if message.get("role") == "tool" and isinstance(ids, list) and ids:
            message = {**message, "tool_call_id": ids[0]}
        if any(k in message for k in _BOOKKEEPING):
            imported.drop("SWE-agent bookkeeping (agent, message_type, thought, action)")
        imported.messages.append(_chat(message, imported, None))
    if isinstance(data.get("trajectory"), list) and data["trajectory"]:
        imported.drop("trajectory steps (a second copy of the history)", len(data["trajectory"]))
    pair_chat(imported)
    return imported


def _document(text: str, what: str) -> dict[str, Any]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TranscriptError(
            f"not JSON ({exc.msg} at line {exc.lineno}); is this a {what}?"
        ) from None
    if not isinstance(data, dict):
        raise TranscriptError(f"a {what} is a JSON object")
    return data


def _chat(message: dict[str, Any], imported: Imported, extra: Any) -> dict[str, Any]:
    out = {k: message[k] for k in CHAT_FIELDS if message.get(k) is not None}
    for field in sorted(set(message) - _READ_FIELDS - set(_BOOKKEEPING)):
        imported.drop(f"'{field}' message fields (no Chat form)")
    if "content" not in out:
        out["content"] = None if out.get("tool_calls") else ""
    if isinstance(out["content"], list):
        out["content"] = _parts(out["content"], imported)
    if isinstance(extra, dict) and extra:
        imported.drop("mini-swe-agent 'extra' records (actions, cost, raw output)")
    return _stamped(out, extra if isinstance(extra, dict) else {}, message)


def _parts(content: list[Any], imported: Imported) -> Any:
    kept = []
    for part in content:
        if isinstance(part, dict) and part.get("type") in ("text", "image_url"):
            kept.append({k: v for k, v in part.items() if k != "cache_control"})
        else:
            imported.drop("content parts with no Chat form")
    if kept and all(p["type"] == "text" for p in kept):
        return text_of(kept)
    return kept


def _stamped(message: dict[str, Any], *sources: dict[str, Any]) -> dict[str, Any]:
    """``message`` with the first numeric ``timestamp`` of ``sources``: mini-swe-agent 2
    keeps it in ``extra``, 1.16-1.17 on the message itself."""
    for source in sources:
        stamp = source.get("timestamp")
        if isinstance(stamp, int | float) and not isinstance(stamp, bool):
            message["timestamp"] = stamp
            break
    return message
