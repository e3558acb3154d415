"""The message-shape boundary: what callers and session files may send, and what they get.

Three shapes are accepted (docs/session-format.md, "Message shapes"):

* ``chat`` — OpenAI Chat Completions messages, the internal shape;
* ``responses`` — OpenAI Responses API input items;
* ``anthropic`` — Anthropic Messages.

A session uses one shape, declared (``open_session(shape=...)``, the session file
header's ``shape``) or detected from the first message that only one shape writes;
a message of another shape is a :class:`ShapeError`. Input is converted to the
internal shape once, here; engines and the store see only that. The caller's
originals are kept (``ctxengine_source``) and given back by :func:`to_caller`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

from . import anthropic, responses
from .chat import (
    KNOWN_FIELDS,
    METADATA_FIELDS,
    REQUEST_FIELDS,
    SOURCE_FIELD,
    caller_copy,
    normalize_chat,
    provider_copy,
    unknown_fields,
)
from .common import ShapeError
from .parts import CHAT_PART_TYPES, media_tokens
from .timestamps import message_time, parse_timestamp, timestamp_problem

Shape = Literal["chat", "responses", "anthropic"]
SHAPES: tuple[str, ...] = ("chat", "responses", "anthropic")

__all__ = [
    "KNOWN_FIELDS",
    "METADATA_FIELDS",
    "REQUEST_FIELDS",
    "SHAPES",
    "SOURCE_FIELD",
    "Shape",
    "ShapeConverter",
    "ShapeError",
    "ShapeReader",
    "caller_copy",
    "check_shape",
    "detect_shape",
    "media_tokens",
    "message_time",
    "parse_timestamp",
    "provider_copy",
    "timestamp_problem",
    "to_caller",
    "to_provider",
    "unknown_fields",
]

_CHAT_ONLY_PARTS = CHAT_PART_TYPES - {"text"}


def check_shape(shape: Any) -> Shape | None:
    """``shape`` when it is a known shape name or None; ValueError naming the choices."""
    if shape is None or shape in SHAPES:
        return shape
    raise ValueError(f"unknown message shape {shape!r}; use one of {', '.join(SHAPES)}")


def detect_shape(item: Any) -> Shape | None:
    """The shape only ``item`` could be written in, or None when several shapes fit it."""
    if not isinstance(item, dict):
        return None
    source = item.get(SOURCE_FIELD)
    if isinstance(source, dict) and source.get("shape") in SHAPES:
        return source["shape"]
    content = item.get("content")
    if isinstance(content, list):
        kinds = {p.get("type") for p in content if isinstance(p, dict)}
        if kinds & anthropic.DISTINCT_BLOCK_TYPES:
            return "anthropic"
        if kinds & responses.PART_TYPES:
            return "responses"
        if kinds & _CHAT_ONLY_PARTS:
            return "chat"
    if item.get("type") == "message" and ("stop_reason" in item or "model" in item):
        return "anthropic"  # an Anthropic response object, dumped whole
    if ("type" in item and "role" not in item) or item.get("type") in responses.ITEM_TYPES:
        return "responses"
    if (
        item.get("role") in ("tool", "function")
        or item.get("tool_calls")
        or item.get("function_call")
    ):
        return "chat"
    return None


class ShapeReader:
    """Converts one session's input to internal messages, holding the session to one shape.

    ``shape`` is the declared shape or None (detected from the first distinctive
    message, then fixed).
    """

    def __init__(self, shape: Shape | None = None) -> None:
        self.shape: Shape | None = check_shape(shape)

    def observe(self, messages: Iterable[Any]) -> None:
        """Learn the shape from stored internal messages (a resumed session)."""
        if self.shape is not None:
            return
        for message in messages:
            found = detect_shape(message)
            if found is not None:
                self.shape = found
                return

    def read(self, items: list[Any]) -> list[tuple[int, Any]]:
        """(index of the input item, internal message) for a batch; ShapeError when mixed."""
        shape = self.shape
        for index, item in enumerate(items):
            found = detect_shape(item)
            if found is None:
                continue
            if shape is None:
                shape = found
            elif found != shape:
                raise ShapeError(
                    f"message {index} is in the {found} shape but this session uses the "
                    f"{shape} shape; send every message of a session in one shape "
                    "(convert the others, or open another session)"
                )
        out = _convert(items, shape or "chat")
        self.shape = shape
        return out


class ShapeConverter:
    """Converts items of one known shape in order: ``feed`` each, then ``flush``.

    Yields (position of the item, internal message) pairs; a bad item raises
    :class:`ShapeError` saying what is wrong with it (without its position).
    """

    def __init__(self, shape: str) -> None:
        self.shape = shape
        self._responses = responses.ResponsesReader() if shape == "responses" else None

    def feed(self, item: Any, position: int) -> list[tuple[int, Any]]:
        if self._responses is not None:
            return self._responses.feed(item, position)
        if self.shape == "anthropic":
            return [(position, m) for m in anthropic.read_anthropic(item)]
        return [(position, normalize_chat(item))]

    def flush(self) -> list[tuple[int, Any]]:
        return self._responses.flush() if self._responses is not None else []


def _convert(items: list[Any], shape: str) -> list[tuple[int, Any]]:
    converter = ShapeConverter(shape)
    out: list[tuple[int, Any]] = []
    for index, item in enumerate(items):
        try:
            out.extend(converter.feed(item, index))
        except ShapeError as exc:
            raise ShapeError(f"message {index}: {exc}") from None
    return out + converter.flush()


def to_caller(messages: list[dict[str, Any]], shape: str | None) -> list[dict[str, Any]]:
    """Stored messages in the caller's shape, unknown fields and timestamps included."""
    if shape == "responses":
        seen: set[int] = set()
        out: list[dict[str, Any]] = []
        for message in messages:
            source = message.get(SOURCE_FIELD)
            if isinstance(source, dict) and source.get("shape") == "responses":
                if id(source) not in seen:
                    seen.add(id(source))
                    out.extend(dict(i) for i in source["items"])
            else:
                out.append(caller_copy(message))
        return out
    if shape == "anthropic":
        out = []
        for message in messages:
            source = message.get(SOURCE_FIELD)
            if isinstance(source, dict) and source.get("shape") == "anthropic":
                if source.get("part", 0) == 0:
                    out.append(dict(source["item"]))
            else:
                out.append(caller_copy(message))
        return out
    return [caller_copy(m) for m in messages]


def to_provider(
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]],
    shape: str | None,
) -> dict[str, Any]:
    """Keyword arguments for the shape's SDK call: ``messages``/``input``, ``system``, tools.

    ``messages`` are internal messages that still carry their source records
    (persistence-only fields may be present; they are not sent).
    """
    if shape == "responses":
        instructions, items = responses.to_responses(messages)
        kwargs: dict[str, Any] = {"input": items}
        if instructions:
            kwargs["instructions"] = instructions
        if tools:
            kwargs["tools"] = [_responses_tool(t) for t in tools]
        return kwargs
    if shape == "anthropic":
        system, converted = anthropic.to_anthropic(messages)
        kwargs = {"messages": converted}
        if system:
            kwargs["system"] = system
        if tools:
            kwargs["tools"] = [_anthropic_tool(t) for t in tools]
        return kwargs
    kwargs = {"messages": [provider_copy(m) for m in messages]}
    if tools:
        kwargs["tools"] = tools
    return kwargs


def _function(tool: dict[str, Any]) -> dict[str, Any]:
    fn = tool.get("function")
    return fn if isinstance(fn, dict) else tool


def _responses_tool(tool: dict[str, Any]) -> dict[str, Any]:
    fn = _function(tool)
    out = {"type": "function", "name": fn.get("name"), "parameters": fn.get("parameters", {})}
    if fn.get("description"):
        out["description"] = fn["description"]
    return out


def _anthropic_tool(tool: dict[str, Any]) -> dict[str, Any]:
    fn = _function(tool)
    out = {"name": fn.get("name"), "input_schema": fn.get("parameters", {"type": "object"})}
    if fn.get("description"):
        out["description"] = fn["description"]
    return out
