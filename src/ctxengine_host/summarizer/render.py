"""Turning summarizer input (text or OpenAI messages) into labelled text pieces."""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterator
from typing import Any

from ..contract.messages import content_text

#: How much of a tool call's arguments a label shows.
ARGS_PREVIEW_CHARS = 100
#: The opening tag of a user message that is one tagged block.
_OPEN_TAG_RE = re.compile(r"\s*<([A-Za-z][\w-]{1,40})(?:\s[^>]{0,200})?>")


def injected_document(text: str) -> str | None:
    """The tag of a document the agent's framework injected as a user message, else None.

    Frameworks wrap workspace files, environment and microagent knowledge in one
    tagged block (``<workspace_context>...</workspace_context>``); a user's own
    message is not one such block.
    """
    match = _OPEN_TAG_RE.match(text)
    if match and text.rstrip().endswith(f"</{match.group(1)}>"):
        return match.group(1)
    return None


def tool_names_by_call_id(messages: list[dict[str, Any]]) -> dict[str, str]:
    """Map each provider tool-call id to the name of the tool it called."""
    names: dict[str, str] = {}
    for message in messages:
        for call in message.get("tool_calls") or ():
            if isinstance(call, dict) and call.get("id"):
                names[call["id"]] = str((call.get("function") or {}).get("name", "tool"))
    return names


def brief_arguments(arguments: Any, limit: int = ARGS_PREVIEW_CHARS) -> str:
    """A one-line preview of tool-call arguments (JSON kept compact)."""
    if isinstance(arguments, str):
        with contextlib.suppress(ValueError):
            arguments = json.loads(arguments)
    if isinstance(arguments, dict):
        text = ", ".join(f"{k}={_scalar(v)}" for k, v in arguments.items())
    else:
        text = str(arguments)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _scalar(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def labelled_pieces(content: str | list[dict[str, Any]]) -> Iterator[tuple[str, str]]:
    """Yield ``(source, text)`` pairs.

    The source is user, assistant, system, call, text, ``tool <name>``, or
    ``context <tag>`` for a document the agent's framework injected as a user message.
    """
    if isinstance(content, str):
        yield "text", content
        return
    names = tool_names_by_call_id(content)
    for message in content:
        role = message.get("role", "")
        text = content_text(message)
        if role == "tool":
            tool = names.get(message.get("tool_call_id", ""), message.get("name") or "tool")
            yield f"tool {tool}", text
            continue
        document = injected_document(text) if role == "user" and text else None
        if document:
            yield f"context {document}", text
        elif text:
            yield (role if role in ("user", "assistant", "system") else "text"), text
        for call in message.get("tool_calls") or ():
            fn = (call.get("function") or {}) if isinstance(call, dict) else {}
            yield "call", f"{fn.get('name', 'tool')}({brief_arguments(fn.get('arguments', ''))})"


def render_transcript(content: str | list[dict[str, Any]]) -> str:
    """The input as one plain-text transcript, one ``[source] text`` block per piece."""
    if isinstance(content, str):
        return content
    return "\n".join(f"[{source}] {text}" for source, text in labelled_pieces(content))


def has_transcript(content: str | list[dict[str, Any]]) -> bool:
    """Whether :func:`render_transcript` of ``content`` is not empty, without rendering it."""
    if isinstance(content, str):
        return bool(content)
    return next(labelled_pieces(content), None) is not None
