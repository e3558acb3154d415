"""Transcripts made to follow the session-file pairing rules, every change counted.

Real transcripts break the rules in a few known ways (an interrupted tool call has no
result, a result outlives its call after an edit, a system notice arrives mid-session);
these apply the runtime's documented repairs (docs/runtime.md, "Validity") in the
transcript's own shape and count each one for the convert report.
"""

from __future__ import annotations

from typing import Any

from ...runtime.validity import MISSING_RESULT_TEXT
from .base import Imported, text_of

Message = dict[str, Any]

#: The repairs, as the convert report names them.
ORPHAN = "tool results that answer no call, kept as user text"
MISSING = "tool calls without a recorded result (result added)"
LATE_SYSTEM = "system messages after the start, kept as user text"
NO_OPENING = "conversations that did not open with a user message"


def pair_chat(imported: Imported) -> None:
    """Chat messages made to follow the session-file rules, each change counted.

    A call without a result gets the host's ``[no tool result was recorded …]`` result;
    a result answering no call becomes a user message; a system-level message after the
    start becomes a user message (the runtime's documented repairs).
    """
    out: list[Message] = []
    open_calls: list[str] = []
    started = False
    for message in imported.messages:
        role = message.get("role")
        if role == "tool":
            if message.get("tool_call_id") in open_calls:
                open_calls.remove(message["tool_call_id"])
                out.append(message)
            else:
                out.append(orphan_result(imported, message.get("tool_call_id"), message))
            continue
        fill_results(imported, out, open_calls, chat_filler)
        if role in ("system", "developer") and started:
            message = late_system(imported, message)
        elif role not in ("system", "developer") and not started and role != "user":
            imported.repaired[NO_OPENING] += 1
            out.append(
                {"role": "user", "content": "[the transcript starts here]", **_stamp(message)}
            )
        started = started or role not in ("system", "developer")
        out.append(message)
        open_calls = [c["id"] for c in message.get("tool_calls") or ()]
    fill_results(imported, out, open_calls, chat_filler)
    imported.messages = out


def chat_filler(call_id: str) -> Message:
    return {"role": "tool", "tool_call_id": call_id, "content": MISSING_RESULT_TEXT}


def fill_results(imported: Imported, out: list[Message], open_calls: list[str], make) -> None:
    """Results for the calls still open, added where the next message would start, with
    the time of the message before them (a filler without one read as the replay's own
    clock, stretching the time range of the summary that covers it to today)."""
    stamp = _stamp(out[-1]) if out else {}
    for call_id in open_calls:
        out.append({**make(call_id), **stamp})
    if open_calls:
        imported.repaired[MISSING] += len(open_calls)
    open_calls.clear()


def orphan_result(imported: Imported, call_id: Any, message: Message) -> Message:
    imported.repaired[ORPHAN] += 1
    text = text_of(message.get("content", message.get("output")))
    return {
        "role": "user",
        "content": f"[tool result for call {call_id}] {text}",
        **_stamp(message),
    }


def late_system(imported: Imported, message: Message) -> Message:
    imported.repaired[LATE_SYSTEM] += 1
    text = text_of(message.get("content"))
    return {"role": "user", "content": f"[system] {text}", **_stamp(message)}


def _stamp(message: Message) -> dict[str, Any]:
    return {"timestamp": message["timestamp"]} if "timestamp" in message else {}


RESPONSES_GROUP = frozenset({"reasoning", "function_call"})


def pair_responses(imported: Imported) -> None:
    """Responses items: outputs follow their calls, calls are answered, in order; a
    transcript that opens with the agent (its first item kept is a call, reasoning or an
    assistant message) gets the opening user message the session rules ask for."""
    out: list[Message] = []
    open_calls: list[str] = []
    in_group = False
    started = False
    for item in imported.messages:
        kind = item.get("type") or "message"
        role = item.get("role")
        if kind == "function_call_output":
            in_group = False
            if item.get("call_id") in open_calls:
                open_calls.remove(item["call_id"])
                out.append(item)
            else:
                out.append(orphan_result(imported, item.get("call_id"), item))
            continue
        starts_group = kind in RESPONSES_GROUP or role == "assistant"
        if not (in_group and kind in RESPONSES_GROUP):  # parallel calls of one response
            fill_results(imported, out, open_calls, responses_filler)
        if kind == "message" and role in ("system", "developer") and started:
            item = late_system(imported, item)
        elif not started and not (kind == "message" and role in ("system", "developer", "user")):
            imported.repaired[NO_OPENING] += 1
            opening = {"type": "message", "role": "user", "content": "[the transcript starts here]"}
            out.append({**opening, **_stamp(item)})
        started = started or role not in ("system", "developer")
        in_group = starts_group
        if kind == "function_call":
            open_calls.append(item["call_id"])
        out.append(item)
    fill_results(imported, out, open_calls, responses_filler)
    imported.messages = out


def responses_filler(call_id: str) -> Message:
    return {"type": "function_call_output", "call_id": call_id, "output": MISSING_RESULT_TEXT}


def pair_anthropic(imported: Imported) -> None:
    """Anthropic messages: each tool_use answered by a tool_result in the next user message."""
    out: list[Message] = []
    open_calls: list[str] = []
    for message in imported.messages:
        blocks = message.get("content")
        if message.get("role") == "user":
            blocks = blocks if isinstance(blocks, list) else [{"type": "text", "text": blocks}]
            kept = []
            for block in blocks:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    if block.get("tool_use_id") in open_calls:
                        open_calls.remove(block["tool_use_id"])
                    else:
                        imported.repaired[
                            "tool results that answer no call, kept as user text"
                        ] += 1
                        block = {
                            "type": "text",
                            "text": f"[tool result for call {block.get('tool_use_id')}] "
                            f"{text_of(block.get('content'))}",
                        }
                kept.append(block)
            missing = [anthropic_filler(c) for c in open_calls]
            if missing:
                imported.repaired[MISSING] += len(missing)
            open_calls = []
            content = missing + kept
            if not missing and isinstance(message.get("content"), str):
                content = message["content"]
            out.append({**message, "content": content})
            continue
        if open_calls:  # an assistant message right after one with unanswered calls
            imported.repaired[MISSING] += len(open_calls)
            fillers = [anthropic_filler(c) for c in open_calls]
            out.append({"role": "user", "content": fillers, **_stamp(out[-1])})
        if not out:
            imported.repaired[NO_OPENING] += 1
            out.append(
                {"role": "user", "content": "[the transcript starts here]", **_stamp(message)}
            )
        blocks = blocks if isinstance(blocks, list) else []
        open_calls = [
            b["id"] for b in blocks if isinstance(b, dict) and b.get("type") == "tool_use"
        ]
        out.append(message)
    if open_calls:
        imported.repaired[MISSING] += len(open_calls)
        fillers = [anthropic_filler(c) for c in open_calls]
        out.append({"role": "user", "content": fillers, **_stamp(out[-1])})
    imported.messages = out


def anthropic_filler(call_id: str) -> Message:
    return {"type": "tool_result", "tool_use_id": call_id, "content": MISSING_RESULT_TEXT}
