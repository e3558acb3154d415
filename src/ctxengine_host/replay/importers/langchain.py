"""LangChain / LangGraph message lists -> Chat messages.

Reads a JSON list (or ``{"messages": [...]}``, a LangGraph state) of messages as
``langchain_core.messages.messages_to_dict`` writes them (``{"type", "data"}``), as
``langchain_core.load.dumpd`` writes them (``{"lc": 1, "id": [..., "AIMessage"],
"kwargs"}``), or as plain ``{"type": "human", "content": ...}`` dicts.
"""

from __future__ import annotations

from typing import Any

from .base import Imported, TranscriptError, arguments_text, read_json_or_jsonl
from .pairing import pair_chat

ROLE_OF_TYPE = {
    "human": "user",
    "user": "user",
    "ai": "assistant",
    "assistant": "assistant",
    "system": "system",
    "developer": "developer",
    "tool": "tool",
    "function": "function",
}
CLASS_TYPES = {
    "HumanMessage": "human",
    "AIMessage": "ai",
    "SystemMessage": "system",
    "ToolMessage": "tool",
    "FunctionMessage": "function",
    "ChatMessage": "chat",
}
#: Fields of a LangChain message that have no Chat form.
METADATA = ("additional_kwargs", "response_metadata", "usage_metadata", "id", "artifact")


def read(text: str) -> Imported:
    imported = Imported("langchain", "chat")
    entries = read_json_or_jsonl(text, "LangChain messages")
    values: list[Any] = []
    for _, value in entries:
        if isinstance(value, dict) and isinstance(value.get("messages"), list):
            values.extend(value["messages"])
        elif isinstance(value, list):
            values.extend(value)
        else:
            values.append(value)
    for index, value in enumerate(values):
        kind, data = _unwrap(value, index)
        imported.messages.extend(_message(kind, data, imported, index))
    pair_chat(imported)
    return imported


def _unwrap(value: Any, index: int) -> tuple[str, dict[str, Any]]:
    if not isinstance(value, dict):
        raise TranscriptError(f"message {index}: expected a LangChain message object")
    if value.get("lc") == 1 and isinstance(value.get("kwargs"), dict):
        name = (value.get("id") or [""])[-1]
        return CLASS_TYPES.get(name, value["kwargs"].get("type", "")), value["kwargs"]
    if isinstance(value.get("data"), dict):
        return str(value.get("type")), value["data"]
    return str(value.get("type") or value.get("role")), value


def _message(kind: str, data: dict[str, Any], imported: Imported, index: int) -> list[dict]:
    role = data.get("role") if kind == "chat" else ROLE_OF_TYPE.get(kind)
    if role not in ROLE_OF_TYPE.values():
        raise TranscriptError(f"message {index}: unknown LangChain message type {kind!r}")
    if any(data.get(k) for k in METADATA):
        imported.drop("LangChain metadata (additional_kwargs, response_metadata, usage, ids)")
    content = _content(data.get("content"), imported)
    message: dict[str, Any] = {"role": role, "content": content}
    if role == "assistant":
        calls = [
            {
                "id": call.get("id") or f"call_{index}_{n}",
                "type": "function",
                "function": {
                    "name": call.get("name", ""),
                    "arguments": arguments_text(call.get("args")),
                },
            }
            for n, call in enumerate(data.get("tool_calls") or ())
        ]
        if data.get("invalid_tool_calls"):
            imported.drop("invalid tool calls", len(data["invalid_tool_calls"]))
        if calls:
            message["tool_calls"] = calls
            if message["content"] == "":
                message["content"] = None
    if role == "tool":
        message["tool_call_id"] = str(data.get("tool_call_id", ""))
    if role in ("function",) or (data.get("name") and role in ("user", "assistant")):
        message["name"] = data["name"]
    return [message]


def _content(content: Any, imported: Imported) -> Any:
    """LangChain content: text, or a list of blocks (text and images kept)."""
    if not isinstance(content, list):
        return "" if content is None else content
    parts: list[dict[str, Any]] = []
    for block in content:
        if isinstance(block, str):
            parts.append({"type": "text", "text": block})
        elif isinstance(block, dict) and block.get("type") == "text":
            parts.append({"type": "text", "text": str(block.get("text", ""))})
        elif isinstance(block, dict) and block.get("type") == "image_url":
            parts.append({"type": "image_url", "image_url": block.get("image_url")})
        else:
            kind = block.get("type") if isinstance(block, dict) else type(block).__name__
            imported.drop(f"content blocks of type {kind!r} (no Chat form)")
    return parts
