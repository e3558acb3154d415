"""OpenAI Responses API input items <-> internal (Chat Completions) messages.

``message`` items become messages; a run of ``reasoning``, an assistant ``message``
and ``function_call`` items (what one response outputs) becomes ONE assistant message
with ``tool_calls``, so a reasoning item stays with its calls and their outputs in
one atomic unit; ``function_call_output`` becomes a ``tool`` message. The original
items ride along in ``ctxengine_source`` and are what the caller gets back.
"""

from __future__ import annotations

import json
from typing import Any

from .chat import SOURCE_FIELD
from .common import ShapeError, copy_timestamp, copy_uid, source_of, with_source

Message = dict[str, Any]

ITEM_TYPES = frozenset({"message", "function_call", "function_call_output", "reasoning"})
PART_TYPES = frozenset({"input_text", "output_text", "input_image", "input_file"})
_EASY_FIELDS = frozenset({"role", "content", "timestamp"})


def _parts_to_chat(content: Any) -> tuple[Any, str | None]:
    """Responses content -> (chat content, refusal text or None)."""
    if not isinstance(content, list):
        return content, None
    parts: list[dict[str, Any]] = []
    refusals: list[str] = []
    for part in content:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind in ("input_text", "output_text", "text"):
            parts.append({"type": "text", "text": part.get("text", "")})
        elif kind == "refusal":
            refusals.append(str(part.get("refusal", "")))
        elif kind == "input_image":
            image = {"url": part.get("image_url") or f"file-id:{part.get('file_id', '')}"}
            if part.get("detail"):
                image["detail"] = part["detail"]
            parts.append({"type": "image_url", "image_url": image})
        elif kind == "input_file":
            file = {k: part[k] for k in ("file_data", "file_id", "filename") if part.get(k)}
            parts.append({"type": "file", "file": file})
        elif kind == "input_audio":
            parts.append({"type": "input_audio", "input_audio": part.get("input_audio")})
        else:
            raise ShapeError(
                f"content part type {kind!r} is not a Responses input part "
                "(input_text, output_text, input_image, input_file, refusal)"
            )
    if parts and all(p["type"] == "text" for p in parts):
        return "\n".join(p["text"] for p in parts), "\n".join(refusals) or None
    return parts, "\n".join(refusals) or None


class ResponsesReader:
    """Feeds Responses items in order; yields (index of the first item, message)."""

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self._items: list[dict[str, Any]] = []
        self._first = 0
        self._text: Any = None
        self._refusal: str | None = None
        self._calls: list[dict[str, Any]] = []

    def feed(self, item: Any, index: int) -> list[tuple[int, Any]]:
        if not isinstance(item, dict) or SOURCE_FIELD in item:
            return [*self.flush(), (index, item)]
        kind = item.get("type") or ("message" if "role" in item else None)
        if kind == "reasoning":
            self._join(item, index)
            return []
        if kind == "function_call":
            for key in ("call_id", "name"):
                if not isinstance(item.get(key), str) or not item[key]:
                    raise ShapeError(f"a function_call item needs a string '{key}'")
            self._join(item, index)
            self._calls.append(
                {
                    "id": item["call_id"],
                    "type": "function",
                    "function": {"name": item["name"], "arguments": item.get("arguments", "")},
                }
            )
            return []
        if kind == "message" and item.get("role") == "assistant":
            text, refusal = _parts_to_chat(item.get("content"))
            out = self.flush() if self._text is not None or self._calls else []
            self._join(item, index)
            self._text, self._refusal = text, refusal
            return out
        message = self._single(item, kind)  # checked before the open group is closed
        return [*self.flush(), (index, copy_uid(item, copy_timestamp(item, message)))]

    def _single(self, item: dict[str, Any], kind: Any) -> Message:
        """The message of an item that stands alone: a non-assistant message, a call output."""
        if kind == "message":
            content, _ = _parts_to_chat(item.get("content"))
            message = {"role": item.get("role"), "content": content}
            if not (set(item) <= _EASY_FIELDS and isinstance(item.get("content"), str)):
                with_source(message, "responses", items=[item])
            return message
        if kind == "function_call_output":
            if not isinstance(item.get("call_id"), str):
                raise ShapeError("a function_call_output item needs a string 'call_id'")
            content, _ = _parts_to_chat(item.get("output", ""))
            message = {"role": "tool", "tool_call_id": item["call_id"], "content": content}
            return with_source(message, "responses", items=[item])
        raise ShapeError(
            f"Responses item type {kind!r} is not supported (supported: "
            f"{', '.join(sorted(ITEM_TYPES))}); convert it to a message or function_call item"
        )

    def _join(self, item: dict[str, Any], index: int) -> None:
        if not self._items:
            self._first = index
        self._items.append(item)

    def flush(self) -> list[tuple[int, Any]]:
        """The assistant message of the items seen since the last flush, if any."""
        if not self._items:
            return []
        message: Message = {"role": "assistant", "content": self._text}
        if message["content"] is None and not self._calls:
            message["content"] = ""
        if self._refusal:
            message["refusal"] = self._refusal
        if self._calls:
            message["tool_calls"] = self._calls
        items = self._items
        copy_timestamp(items[0], message)
        with_source(message, "responses", items=items)
        copy_uid(items[0], message)
        out = [(self._first, message)]
        self._reset()
        return out


def to_responses(messages: list[Message]) -> tuple[str | None, list[dict[str, Any]]]:
    """Internal messages -> (instructions from leading system messages, Responses input)."""
    instructions: list[str] = []
    items: list[dict[str, Any]] = []
    for message in messages:
        source = source_of(message, "responses")
        if source is not None:
            items.extend(_sendable(i) for i in source["items"])
            continue
        role = message.get("role")
        if role in ("system", "developer") and not items:
            instructions.append(_text(message.get("content")))
            continue
        if role == "tool":
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": message.get("tool_call_id"),
                    "output": _text(message.get("content")),
                }
            )
            continue
        content = message.get("content")
        if content not in (None, ""):
            items.append({"role": role, "content": _content_to_responses(content, role)})
        for call in message.get("tool_calls") or ():
            fn = call.get("function") or {}
            items.append(
                {
                    "type": "function_call",
                    "call_id": call.get("id"),
                    "name": fn.get("name", ""),
                    "arguments": fn.get("arguments", ""),
                }
            )
    return ("\n\n".join(instructions) or None), items


def _sendable(item: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in item.items() if k != "timestamp"}


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text"
        )
    return "" if content is None else json.dumps(content)


def _content_to_responses(content: Any, role: Any) -> Any:
    if not isinstance(content, list):
        return content
    text_type = "output_text" if role == "assistant" else "input_text"
    parts = []
    for part in content:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text":
            parts.append({"type": text_type, "text": part.get("text", "")})
        elif kind == "image_url":
            image = part.get("image_url") or {}
            parts.append(
                {
                    "type": "input_image",
                    "image_url": image.get("url"),
                    "detail": image.get("detail", "auto"),
                }
            )
        elif kind == "file":
            parts.append({"type": "input_file", **(part.get("file") or {})})
        else:
            parts.append(part)
    return parts
