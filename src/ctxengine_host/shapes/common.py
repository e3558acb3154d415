"""What the shape converters share: the error, the source record, the chat digest."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from .chat import SOURCE_FIELD

Message = dict[str, Any]


class ShapeError(ValueError):
    """Input that is not a valid message of the session's shape; says what and the fix."""


def chat_digest(message: Message) -> str:
    """A digest of what a provider reads of a message: role, content and tool fields.

    A converted message keeps its caller-shape original only while this digest is
    unchanged; an engine that rewrote the message gets it converted afresh.
    """
    body = [message.get(k) for k in ("role", "content", "tool_calls", "tool_call_id")]
    text = json.dumps(body, sort_keys=True, ensure_ascii=False, default=str)
    # A lone surrogate (half of a character) too: the store repairs it (tokens.versioned).
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=12).hexdigest()


def with_source(message: Message, shape: str, **record: Any) -> Message:
    """``message`` with its source record (the caller's original and the chat digest)."""
    message[SOURCE_FIELD] = {"shape": shape, **record, "chat": chat_digest(message)}
    return message


def source_of(message: Message, shape: str) -> dict[str, Any] | None:
    """The message's source record of ``shape`` when the message is unchanged since."""
    source = message.get(SOURCE_FIELD)
    if not isinstance(source, dict) or source.get("shape") != shape:
        return None
    if source.get("chat") != chat_digest(message):
        return None
    return source


def copy_timestamp(item: Any, message: Message) -> Message:
    """Carry an item's ``timestamp`` over to the message made from it."""
    if isinstance(item, dict) and item.get("timestamp") is not None:
        message["timestamp"] = item["timestamp"]
    return message


def copy_uid(item: Any, message: Message) -> Message:
    """Carry the caller's ``message_uid`` over, so a re-sent item is seen as a retry."""
    if isinstance(item, dict) and isinstance(item.get("message_uid"), str):
        message["message_uid"] = item["message_uid"]
    return message
