"""Helpers over OpenAI-format message lists shared by the host and engines."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from .models import PERSISTENCE_ONLY_FIELDS

Message = dict[str, Any]

#: A UTF-16 surrogate code point: in a Python string, only ever half of a character.
_SURROGATE = re.compile("[\ud800-\udfff]")


def leading_system(messages: Sequence[Any]) -> list[Message]:
    """The system messages a request opens with: its head, which a host's budget leaves
    out (the system prompt is taken off the window first)."""
    head = []
    for message in messages:
        if not isinstance(message, dict) or message.get("role") != "system":
            break
        head.append(message)
    return head


#: The longest ``message_uid`` a caller may give: the stores index rows by it, and
#: PostgreSQL's index refuses an entry over ~2,700 bytes (four UTF-8 bytes a character),
#: where SQLite takes any length. Uids are ids (ours are 32 hex digits, providers' ~30-60).
MAX_UID_CHARS = 256


def key_problem(key: str, max_chars: int) -> str | None:
    """Why ``key`` (an id given from outside) cannot key stored rows on every backend, or
    None: PostgreSQL text holds no NUL and its index no entry over ~2,700 bytes, where
    SQLite takes both."""
    if not key:
        return "is empty"
    if "\x00" in key:
        return "holds a NUL character"
    if len(key) > max_chars:
        return f"has {len(key)} characters (at most {max_chars})"
    return None


def uid_problem(uid: str) -> str | None:
    """Why a caller's ``message_uid`` cannot key a stored row on every backend, or None."""
    return key_problem(uid, MAX_UID_CHARS)


def well_formed(message: Message) -> tuple[Message, int]:
    """``message`` with every lone UTF-16 surrogate in its keys and texts replaced by
    U+FFFD (two that make a character joined into it), and how many surrogates were
    found (0: ``message`` itself, not a copy).

    A JavaScript tool that truncates a text by length can cut an emoji in two, and its
    JSON then holds ``\\ud83d`` alone (real Claude Code session files do): UTF-8 cannot
    encode it, so no store can keep it, and providers refuse a request holding it."""
    repaired, count = _repaired(message)
    return (repaired, count) if count else (message, 0)


def well_formed_text(text: str) -> str:
    """``text`` with each lone UTF-16 surrogate replaced by U+FFFD, as :func:`well_formed`
    does in a message."""
    return _repaired(text)[0]  # type: ignore[no-any-return]


def _repaired(value: Any) -> tuple[Any, int]:
    if isinstance(value, str):
        found = len(_SURROGATE.findall(value))
        if not found:
            return value, 0
        # Two halves that do make a character are joined; a lone one becomes U+FFFD.
        return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace"), found
    if isinstance(value, dict):
        out: dict[Any, Any] = {}
        total = 0
        for key, item in value.items():
            key, in_key = _repaired(key)
            out[key], in_item = _repaired(item)
            total += in_key + in_item
        return out, total
    if isinstance(value, list | tuple):
        items = [_repaired(item) for item in value]
        return [item for item, _ in items], sum(n for _, n in items)
    return value, 0


def strip_persistence_fields(message: Message) -> Message:
    """A copy of ``message`` without the persistence-only fields (or the same dict if none)."""
    if PERSISTENCE_ONLY_FIELDS.isdisjoint(message):
        return message
    return {k: v for k, v in message.items() if k not in PERSISTENCE_ONLY_FIELDS}


def content_text(message: Message) -> str:
    """The text of a message's content, joining the text parts of multi-part content."""
    content = message.get("content")
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                parts.append(part["text"])
            elif isinstance(part, str):
                parts.append(part)
        return "\n".join(parts)
    return str(content)


def tool_call_ids(message: Message) -> list[str]:
    """The provider ids of an assistant message's tool calls, in order."""
    calls = message.get("tool_calls") or []
    return [c.get("id", "") for c in calls if isinstance(c, dict)]


def atomic_blocks(messages: Sequence[Message]) -> list[list[Message]]:
    """Split messages into blocks that must be kept or dropped together.

    An assistant message with tool calls forms one block with the tool results
    that follow it; every other message is a block of its own.
    """
    blocks: list[list[Message]] = []
    for message in messages:
        if message.get("role") == "tool" and blocks and _open_tool_block(blocks[-1]):
            blocks[-1].append(message)
        else:
            blocks.append([message])
    return blocks


def _open_tool_block(block: list[Message]) -> bool:
    head = block[0]
    return head.get("role") == "assistant" and bool(head.get("tool_calls"))


def flatten(blocks: Iterable[list[Message]]) -> list[Message]:
    """Join blocks back into one message list."""
    return [message for block in blocks for message in block]
