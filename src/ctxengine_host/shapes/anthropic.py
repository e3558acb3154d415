"""Anthropic Messages <-> internal (Chat Completions) messages.

An assistant message's ``text`` blocks become its content and its ``tool_use``
blocks its ``tool_calls`` (``input`` as JSON text); ``thinking`` and
``redacted_thinking`` blocks have no chat form and stay in the source record, so
they go back to Anthropic with their signatures. A user message's ``tool_result``
blocks become one ``tool`` message each and its other blocks one user message after
them: the results of one assistant message then follow it, which is the atomic unit
both engines keep together. The caller's original message is in
``ctxengine_source`` of every message made from it (``part`` k of ``parts``).
"""

from __future__ import annotations

import json
from typing import Any

from .chat import SOURCE_FIELD
from .common import ShapeError, copy_timestamp, copy_uid, source_of, with_source

Message = dict[str, Any]

BLOCK_TYPES = frozenset(
    {"text", "image", "document", "thinking", "redacted_thinking", "tool_use", "tool_result"}
)
#: Block types only Anthropic uses (what detection looks for).
DISTINCT_BLOCK_TYPES = BLOCK_TYPES - {"text"}


def _block_type(block: Any) -> str:
    kind = block.get("type") if isinstance(block, dict) else None
    if kind not in BLOCK_TYPES:
        raise ShapeError(
            f"content block type {kind!r} is not supported (supported: "
            f"{', '.join(sorted(BLOCK_TYPES))})"
        )
    return kind  # type: ignore[return-value]


def _media_part(block: dict[str, Any]) -> dict[str, Any]:
    """An image or document block as a chat content part."""
    source = block.get("source") or {}
    if source.get("type") == "base64":
        url = f"data:{source.get('media_type', '')};base64,{source.get('data', '')}"
    else:
        url = str(source.get("url") or source.get("file_id") or source.get("data") or "")
    if block["type"] == "image":
        return {"type": "image_url", "image_url": {"url": url}}
    if source.get("type") == "text":
        return {"type": "text", "text": str(source.get("data", ""))}
    return {"type": "file", "file": {"file_data": url}}


def _blocks_to_chat(blocks: list[Any]) -> Any:
    parts: list[dict[str, Any]] = []
    for block in blocks:
        kind = _block_type(block)
        if kind == "text":
            parts.append({"type": "text", "text": str(block.get("text", ""))})
        elif kind in ("image", "document"):
            parts.append(_media_part(block))
    if all(p["type"] == "text" for p in parts):
        return "\n".join(p["text"] for p in parts)
    return parts


def read_anthropic(message: Any) -> list[Any]:
    """One Anthropic message as the internal message(s) it stands for."""
    if not isinstance(message, dict) or SOURCE_FIELD in message:
        return [message]
    content = message.get("content")
    role = message.get("role")
    if role not in ("user", "assistant"):
        raise ShapeError(f"an Anthropic message has role user or assistant, not {role!r}")
    if isinstance(content, str):
        return [message]
    if not isinstance(content, list):
        raise ShapeError("'content' must be a string or a list of content blocks")
    if role == "assistant":
        out: Message = {"role": "assistant", "content": None}
        text_blocks = [b for b in content if _block_type(b) != "tool_use"]
        calls = [
            {
                "id": b.get("id"),
                "type": "function",
                "function": {
                    "name": b.get("name", ""),
                    "arguments": json.dumps(b.get("input", {}), ensure_ascii=False),
                },
            }
            for b in content
            if b["type"] == "tool_use"
        ]
        text = _blocks_to_chat(text_blocks)
        out["content"] = text if text or not calls else None
        if calls:
            out["tool_calls"] = calls
        copy_timestamp(message, out)
        return [copy_uid(message, with_source(out, "anthropic", item=message, part=0, parts=1))]
    results = [b for b in content if _block_type(b) == "tool_result"]
    rest = [b for b in content if b["type"] != "tool_result"]
    made: list[Message] = []
    for block in results:
        if not isinstance(block.get("tool_use_id"), str):
            raise ShapeError("a tool_result block needs a string 'tool_use_id'")
        inner = block.get("content", "")
        body = _blocks_to_chat(inner) if isinstance(inner, list) else inner
        made.append({"role": "tool", "tool_call_id": block["tool_use_id"], "content": body})
    if rest or not made:
        made.append({"role": "user", "content": _blocks_to_chat(rest)})
    for part, out in enumerate(made):
        copy_timestamp(message, out)
        with_source(out, "anthropic", item=message, part=part, parts=len(made))
    copy_uid(message, made[0])
    return made


def to_anthropic(messages: list[Message]) -> tuple[str | None, list[dict[str, Any]]]:
    """Internal messages -> (system text, Anthropic messages).

    A message whose source is intact (every part present, in order, unchanged) goes
    back as the caller's original; anything else is converted from its chat form.
    """
    system: list[str] = []
    out: list[dict[str, Any]] = []
    i = 0
    while i < len(messages):
        message = messages[i]
        original = _intact_original(messages, i)
        if original is not None:
            out.append(_sendable(original))
            i += original_parts(messages[i])
            continue
        role = message.get("role")
        if role in ("system", "developer") and not out:
            system.append(_text(message.get("content")))
        elif role == "tool":
            block = {
                "type": "tool_result",
                "tool_use_id": message.get("tool_call_id"),
                "content": _content_to_blocks(message.get("content")),
            }
            _append_user_blocks(out, [block])
        elif role == "assistant":
            blocks = _content_to_blocks(message.get("content"))
            for call in message.get("tool_calls") or ():
                fn = call.get("function") or {}
                blocks.append(
                    {
                        "type": "tool_use",
                        "id": call.get("id"),
                        "name": fn.get("name", ""),
                        "input": _arguments(fn.get("arguments")),
                    }
                )
            plain = isinstance(message.get("content"), str) and not message.get("tool_calls")
            out.append({"role": "assistant", "content": message["content"] if plain else blocks})
        elif isinstance(message.get("content"), str) and not (out and out[-1]["role"] == "user"):
            out.append({"role": "user", "content": message["content"]})
        else:
            _append_user_blocks(out, _content_to_blocks(message.get("content")))
        i += 1
    return ("\n\n".join(system) or None), out


def original_parts(message: Message) -> int:
    source = message.get(SOURCE_FIELD)
    return int(source.get("parts", 1)) if isinstance(source, dict) else 1


def _intact_original(messages: list[Message], i: int) -> dict[str, Any] | None:
    source = source_of(messages[i], "anthropic")
    if source is None or source.get("part") != 0:
        return None
    parts = int(source.get("parts", 1))
    if i + parts > len(messages):
        return None
    for k in range(1, parts):
        other = source_of(messages[i + k], "anthropic")
        if other is None or other.get("part") != k or other.get("item") != source["item"]:
            return None
    return source["item"]


def _sendable(item: dict[str, Any]) -> dict[str, Any]:
    """The request fields of a stored Anthropic message (a dumped response has more)."""
    out = {"role": item["role"], "content": item.get("content")}
    if isinstance(out.get("content"), list):
        out["content"] = list(out["content"])  # later tool results may be appended
    return out


def _append_user_blocks(out: list[dict[str, Any]], blocks: list[dict[str, Any]]) -> None:
    """Tool results and the user text after them share one user message, as Anthropic wants."""
    if out and out[-1]["role"] == "user":
        last = out[-1]["content"]
        head = [{"type": "text", "text": last}] if isinstance(last, str) else list(last)
        out[-1] = {"role": "user", "content": head + blocks}
    else:
        out.append({"role": "user", "content": list(blocks)})


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text"
        )
    return ""


def _content_to_blocks(content: Any) -> list[dict[str, Any]]:
    if content is None or content == "":
        return []
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    blocks = []
    for part in content if isinstance(content, list) else ():
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text":
            blocks.append({"type": "text", "text": part.get("text", "")})
        elif kind == "image_url":
            blocks.append({"type": "image", "source": _image_source(part.get("image_url") or {})})
        elif kind == "file":
            data = (part.get("file") or {}).get("file_data", "")
            blocks.append({"type": "document", "source": _base64_source(str(data))})
        else:
            blocks.append({"type": "text", "text": json.dumps(part, ensure_ascii=False)})
    return blocks


def _image_source(image: dict[str, Any]) -> dict[str, Any]:
    url = str(image.get("url", ""))
    return _base64_source(url) if url.startswith("data:") else {"type": "url", "url": url}


def _base64_source(url: str) -> dict[str, Any]:
    head, _, data = url.partition(",")
    media_type = head.removeprefix("data:").removesuffix(";base64")
    return {"type": "base64", "media_type": media_type, "data": data}


def _arguments(text: Any) -> Any:
    try:
        value = json.loads(text) if isinstance(text, str) and text.strip() else {}
    except ValueError:
        return {"arguments": text}
    return value if isinstance(value, dict) else {"value": value}
