"""Helpers over OpenAI-format message lists shared by the host and engines."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from .models import PERSISTENCE_ONLY_FIELDS

Message = dict[str, Any]


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
