"""The gateway's ``AgentMessage`` ↔ our OpenAI-format messages, without losing anything.

Going in, each message becomes the OpenAI shape our engines read (text, image
parts as data URLs, ``tool_calls`` with JSON-string arguments, ``tool`` results)
and keeps the gateway's original under :data:`ORIGINAL_KEY`; that field is stored
with the message, so it survives a server restart. Coming back, a message the
engine left as it was returns the original exactly; one the engine changed or
wrote (a summary, a truncated tool output) is rebuilt in the gateway's shape,
keeping the original's metadata (timestamp, provider, usage…) where there is one.

The gateway's own roles that models read as context (``custom``,
``bashExecution``, ``branchSummary``, ``compactionSummary``) come in as user
text; ``custom`` messages marked ``excludeFromContext`` are not context at all and
are skipped (:func:`is_context`).
"""

from __future__ import annotations

import json
import time
from typing import Any

Message = dict[str, Any]

#: The key under which a converted message keeps the gateway's original.
ORIGINAL_KEY = "gateway_message"

_GATEWAY_ROLES = ("user", "assistant", "toolResult", "custom", "bashExecution")
_SUMMARY_ROLES = ("branchSummary", "compactionSummary")


class ShapeError(ValueError):
    """A message that is not a gateway ``AgentMessage``."""


def is_context(message: Any) -> bool:
    """False for messages the gateway keeps out of model context."""
    return not (
        isinstance(message, dict)
        and message.get("role") == "custom"
        and message.get("excludeFromContext") is True
    )


def to_openai(message: Any, index: int = 0) -> Message:
    """One ``AgentMessage`` as an OpenAI-format message, the original kept alongside."""
    if not isinstance(message, dict):
        raise ShapeError(f"message {index} is a {type(message).__name__}, not an AgentMessage")
    role = message.get("role")
    if role == "user" or role == "custom":
        converted: Message = {"role": "user", "content": _content_in(message.get("content"), index)}
    elif role == "assistant":
        converted = _assistant_in(message, index)
    elif role == "toolResult":
        call_id = message.get("toolCallId")
        if not isinstance(call_id, str) or not call_id:
            raise ShapeError(f"message {index}: a toolResult needs a string 'toolCallId'")
        converted = {
            "role": "tool",
            "tool_call_id": call_id,
            "content": _content_in(message.get("content"), index),
        }
        if isinstance(message.get("toolName"), str):
            converted["name"] = message["toolName"]
    elif role == "bashExecution":
        text = f"$ {message.get('command', '')}\n{message.get('output', '')}"
        converted = {"role": "user", "content": text}
    elif role in _SUMMARY_ROLES:
        converted = {"role": "user", "content": str(message.get("summary", ""))}
    else:
        known = ", ".join((*_GATEWAY_ROLES, *_SUMMARY_ROLES))
        raise ShapeError(f"message {index} has unknown role {role!r}; expected one of {known}")
    converted[ORIGINAL_KEY] = message
    return converted


def _content_in(content: Any, index: int) -> str | list[dict[str, Any]]:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise ShapeError(f"message {index}: content must be a string or an array of blocks")
    parts: list[dict[str, Any]] = []
    for block in content:
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text":
            parts.append({"type": "text", "text": str(block.get("text", ""))})
        elif kind == "image":
            url = f"data:{block.get('mimeType', 'image/png')};base64,{block.get('data', '')}"
            parts.append({"type": "image_url", "image_url": {"url": url}})
        else:
            raise ShapeError(f"message {index}: unknown content block {kind!r}")
    if all(p["type"] == "text" for p in parts):
        return "\n".join(p["text"] for p in parts)
    return parts


def _assistant_in(message: Message, index: int) -> Message:
    content = message.get("content")
    if not isinstance(content, list):
        content = [{"type": "text", "text": content}] if isinstance(content, str) else []
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    for block in content:
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text":
            texts.append(str(block.get("text", "")))
        elif kind == "toolCall":
            call_id = block.get("id")
            if not isinstance(call_id, str) or not call_id:
                raise ShapeError(f"message {index}: a toolCall needs a string 'id'")
            arguments = block.get("arguments", {})
            calls.append(
                {
                    "id": call_id,
                    "type": "function",
                    "function": {
                        "name": str(block.get("name", "")),
                        "arguments": json.dumps(arguments, ensure_ascii=False),
                    },
                }
            )
        elif kind != "thinking":  # reasoning stays in the original only
            raise ShapeError(f"message {index}: unknown assistant block {kind!r}")
    converted: Message = {"role": "assistant", "content": "\n".join(texts) if texts else None}
    if calls:
        converted["tool_calls"] = calls
    return converted


def usage_of(message: Message) -> dict[str, int] | None:
    """An assistant ``AgentMessage``'s usage in OpenAI terms, or None."""
    usage = message.get("usage")
    if not isinstance(usage, dict):
        return None
    prompt = sum(int(usage.get(k) or 0) for k in ("input", "cacheRead", "cacheWrite"))
    completion = int(usage.get("output") or 0)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def from_openai(
    message: Message, tool_names: dict[str, str], fresh: Message | None = None
) -> Message:
    """An OpenAI-format message (maybe changed by the engine) back in the gateway's shape.

    ``tool_names`` maps tool-call ids to tool names, for results whose original
    is unknown (the gateway's ``toolResult`` names its tool). ``fresh`` is
    :func:`to_openai` of the original, when the caller has it cached.
    """
    original = message.get(ORIGINAL_KEY)
    if isinstance(original, dict):
        if unchanged(message, fresh if fresh is not None else to_openai(original)):
            return original
        base = {k: v for k, v in original.items() if k not in ("content", "summary")}
    else:
        base = {}
    role = message.get("role")
    now = int(time.time() * 1000)
    if role == "assistant":
        out = {
            "api": "openai-completions",
            "provider": "ctxengine",
            "model": "ctxengine",
            "usage": _zero_usage(),
            "stopReason": "toolUse" if message.get("tool_calls") else "stop",
            "timestamp": now,
            **base,
            "role": "assistant",
            "content": _assistant_out(message, original),
        }
        return out
    if role == "tool":
        call_id = str(message.get("tool_call_id", ""))
        return {
            "toolName": tool_names.get(call_id, str(message.get("name", ""))),
            "isError": False,
            "timestamp": now,
            **base,
            "role": "toolResult",
            "toolCallId": call_id,
            "content": _blocks_out(message.get("content")),
        }
    # user, system (summaries our engines write) and anything else: user context.
    if base.get("role") not in (None, "user"):
        base = {"timestamp": base.get("timestamp", now)}
    content = message.get("content")
    return {
        "timestamp": now,
        **base,
        "role": "user",
        "content": content if isinstance(content, str) else _blocks_out(content),
    }


def unchanged(message: Message, fresh: Message) -> bool:
    """True when ``message`` still says what ``fresh`` (its original, converted) says."""
    if len(message) != len(fresh):
        return False
    for key, value in fresh.items():
        if key != ORIGINAL_KEY and message.get(key, _MISSING) != value:
            return False
    return True


_MISSING = object()


def _blocks_out(content: Any) -> list[dict[str, Any]]:
    if content is None:
        return []
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    blocks: list[dict[str, Any]] = []
    for part in content if isinstance(content, list) else [content]:
        if isinstance(part, dict) and part.get("type") == "image_url":
            url = str((part.get("image_url") or {}).get("url", ""))
            head, _, data = url.partition(";base64,")
            blocks.append({"type": "image", "data": data, "mimeType": head.removeprefix("data:")})
        elif isinstance(part, dict):
            blocks.append({"type": "text", "text": str(part.get("text", ""))})
        else:
            blocks.append({"type": "text", "text": str(part)})
    return blocks


def _assistant_out(message: Message, original: Any) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if isinstance(original, dict) and isinstance(original.get("content"), list):
        blocks.extend(b for b in original["content"] if b.get("type") == "thinking")
    text = message.get("content")
    if isinstance(text, list):
        text = "\n".join(b["text"] for b in _blocks_out(text) if b["type"] == "text")
    if text:
        blocks.append({"type": "text", "text": str(text)})
    for call in message.get("tool_calls") or ():
        function = call.get("function") or {}
        try:
            arguments = json.loads(function.get("arguments") or "{}")
        except ValueError:
            arguments = {"_raw": function.get("arguments")}
        blocks.append(
            {
                "type": "toolCall",
                "id": str(call.get("id", "")),
                "name": str(function.get("name", "")),
                "arguments": arguments if isinstance(arguments, dict) else {"value": arguments},
            }
        )
    return blocks


def _zero_usage() -> dict[str, Any]:
    cost = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}
    return {
        "input": 0,
        "output": 0,
        "cacheRead": 0,
        "cacheWrite": 0,
        "totalTokens": 0,
        "cost": cost,
    }
