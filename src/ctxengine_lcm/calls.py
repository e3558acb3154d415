"""The tool calls of a message as text: what search indexes and what expand decodes.

A fact is often stated only in a tool call's arguments (the file an edit touched, the
new value it wrote). The arguments are a JSON string inside the message, so a search
of the stored JSON would see escaped text (``\\n`` glued to the next word) and an
expand result would show it escaped, never as the value written. This module decodes
them, bounded: a hostile or huge argument string is read up to ``MAX_DECODED_CHARS``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

#: Longest argument text that is decoded (longer ones are indexed as written, cut here).
MAX_DECODED_CHARS = 200_000


def decoded_calls(message: dict[str, Any]) -> list[tuple[str, Any, bool]]:
    """(name, arguments, decoded) of each tool call: OpenAI-style ``tool_calls`` (their
    arguments decoded from JSON text where they are JSON, ``decoded`` then True) and
    ``tool_use`` content blocks (their input is a value already)."""
    calls: list[tuple[str, Any, bool]] = []
    for call in message.get("tool_calls") or ():
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict):
            raw = function.get("arguments")
            value = _decoded(raw)
            decoded = isinstance(raw, str) and isinstance(value, dict | list)
            calls.append((str(function.get("name") or ""), value, decoded))
    content = message.get("content")
    if isinstance(content, list):
        for part in content:
            if isinstance(part, dict) and part.get("type") == "tool_use":
                calls.append((str(part.get("name") or ""), part.get("input"), False))
    return calls


def calls_text(message: dict[str, Any]) -> str:
    """The tool calls as searchable lines, ``name key: value`` per string value; ""
    without calls."""
    lines: list[str] = []
    for name, arguments, _ in decoded_calls(message):
        values = [f"{key}: {value}" if key else value for key, value in _leaves(arguments, "")]
        lines.append(" ".join([name, *values]))
    return "\n".join(line for line in lines if line.strip())


def _decoded(arguments: Any) -> Any:
    """JSON argument text decoded; anything else (a cut or non-JSON text) as it is."""
    if not isinstance(arguments, str) or len(arguments) > MAX_DECODED_CHARS:
        return arguments[:MAX_DECODED_CHARS] if isinstance(arguments, str) else arguments
    if arguments.lstrip()[:1] not in ("{", "["):
        return arguments
    try:
        return json.loads(arguments)
    except ValueError:
        return arguments


def _leaves(value: Any, key: str, depth: int = 0) -> Iterator[tuple[str, str]]:
    """(key, text) of every scalar inside ``value``, depth-first, nesting bounded."""
    if isinstance(value, dict) and depth < 16:
        for k, v in value.items():
            yield from _leaves(v, str(k), depth + 1)
    elif isinstance(value, list) and depth < 16:
        for v in value:
            yield from _leaves(v, key, depth + 1)
    elif value is not None and not isinstance(value, dict | list):
        yield key, str(value)
