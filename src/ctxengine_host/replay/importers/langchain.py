"""LangChain / LangGraph message lists -> Chat messages.

Reads a JSON list (or ``{"messages": [...]}``, a LangGraph state) of messages as
``langchain_core.messages.messages_to_dict`` writes them (``{"type", "data"}``), as
``langchain_core.load.dumpd`` writes them (``{"lc": 1, "id": [..., "AIMessage"],
"kwargs"}``), or as plain ``{"type": "human", "content": ...}`` dicts; streamed
messages (``AIMessageChunk``) read as the message they are a part of. A LangSmith run
(``{"inputs", "outputs"}``) is read as the conversation it holds.
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
        elif _is_run(value):
            values.extend(_run_messages(value))
        elif isinstance(value, list):
            values.extend(value)
        else:
            values.append(value)
    for index, value in enumerate(values):
        kind, data = _unwrap(value, index)
        imported.messages.extend(_message(kind, data, imported, index))
    pair_chat(imported)
    return imported


def _is_run(value: Any) -> bool:
    """A LangSmith run export: its messages are under ``inputs`` and ``outputs``."""
    return isinstance(value, dict) and isinstance(value.get("inputs"), dict) and "type" not in value


def _run_messages(run: dict[str, Any]) -> list[Any]:
    """The conversation a LangSmith run holds.

    A graph or chain run's ``outputs.messages`` is its final state, which already holds
    the input messages; a chat-model run holds its prompt in ``inputs.messages`` (one
    list per prompt of the batch: the first is read) and its answer in
    ``outputs.generations``.
    """
    outputs: dict[str, Any] = run["outputs"] if isinstance(run.get("outputs"), dict) else {}
    if isinstance(outputs.get("messages"), list) and outputs["messages"]:
        return list(outputs["messages"])
    prompt: list[Any] = run["inputs"].get("messages") or []
    if prompt and isinstance(prompt[0], list):
        prompt = prompt[0]
    answers: list[Any] = outputs.get("generations") or []
    if answers and isinstance(answers[0], list):
        answers = answers[0]
    replies = [g["message"] for g in answers[:1] if isinstance(g, dict) and "message" in g]
    return [*prompt, *replies]


def _kind(name: str) -> str:
    """A message type from a class or type name; a streamed part (``AIMessageChunk``)
    is the message it is a part of."""
    name = name.removesuffix("Chunk")
    return CLASS_TYPES.get(name, name)


def _unwrap(value: Any, index: int) -> tuple[str, dict[str, Any]]:
    if not isinstance(value, dict):
        raise TranscriptError(f"message {index}: expected a LangChain message object")
    if value.get("lc") == 1 and isinstance(value.get("kwargs"), dict):
        name = (value.get("id") or [""])[-1]
        kind = _kind(name) if name in CLASS_TYPES or name.endswith("Chunk") else ""
        return kind or _kind(str(value["kwargs"].get("type", ""))), value["kwargs"]
    if isinstance(value.get("data"), dict):
        return _kind(str(value.get("type"))), value["data"]
    return _kind(str(value.get("type") or value.get("role"))), value


def _message(kind: str, data: dict[str, Any], imported: Imported, index: int) -> list[dict]:
    role = data.get("role") if kind == "chat" else ROLE_OF_TYPE.get(kind)
    if role not in ROLE_OF_TYPE.values():
        raise TranscriptError(f"message {index}: unknown LangChain message type {kind!r}")
    if any(data.get(k) for k in METADATA):
        imported.drop("LangChain metadata (additional_kwargs, response_metadata, usage, ids)")
    extra = data.get("additional_kwargs") or {}
    if isinstance(extra, dict) and (extra.get("reasoning") or extra.get("reasoning_content")):
        imported.drop("reasoning in additional_kwargs (no Chat form)")
    content = _content(data.get("content"), imported)
    message: dict[str, Any] = {"role": role, "content": content}
    if role == "assistant":
        calls = _tool_calls(data, index)
        if data.get("invalid_tool_calls"):
            imported.drop("invalid tool calls", len(data["invalid_tool_calls"]))
        if calls:
            message["tool_calls"] = calls
            if message["content"] in ("", []):
                message["content"] = None
    if role == "tool":
        message["tool_call_id"] = str(data.get("tool_call_id", ""))
    if role in ("function",) or (data.get("name") and role in ("user", "assistant")):
        message["name"] = data["name"]
    return [message]


def _tool_calls(data: dict[str, Any], index: int) -> list[dict[str, Any]]:
    """An AI message's calls, wherever its LangChain version put them.

    ``tool_calls`` holds them parsed; before LangChain parsed them (and in a message a
    tracer trimmed) they are only in the provider's form: OpenAI's in
    ``additional_kwargs.tool_calls``, Anthropic's ``tool_use`` (and the standard
    ``tool_call`` / Responses ``function_call``) content blocks. A call in two of these
    places is one call, known by its id.
    """
    found = [(c.get("id"), c.get("name"), c.get("args")) for c in data.get("tool_calls") or ()]
    extra = data.get("additional_kwargs")
    if not found and isinstance(extra, dict):
        for call in extra.get("tool_calls") or ():
            function = call.get("function") or {}
            found.append((call.get("id"), function.get("name"), function.get("arguments")))
    known = {call_id for call_id, _, _ in found if call_id}
    for block in _call_blocks(data.get("content")):
        call_id = block.get("call_id") or block.get("id")
        if not call_id or call_id not in known:
            arguments = block.get("input", block.get("args", block.get("arguments")))
            found.append((call_id, block.get("name"), arguments))
    return [
        {
            "id": call_id or f"call_{index}_{n}",
            "type": "function",
            "function": {"name": name or "", "arguments": arguments_text(arguments)},
        }
        for n, (call_id, name, arguments) in enumerate(found)
    ]


#: Content blocks that are a tool call (Anthropic's, LangChain's standard, Responses').
CALL_BLOCKS = frozenset({"tool_use", "tool_call", "function_call"})


def _is_call_block(block: Any) -> bool:
    return isinstance(block, dict) and block.get("type") in CALL_BLOCKS


def _call_blocks(content: Any) -> list[dict[str, Any]]:
    return [b for b in content if _is_call_block(b)] if isinstance(content, list) else []


def _content(content: Any, imported: Imported) -> Any:
    """LangChain content: text, or a list of blocks (text and images kept; a tool-call
    block is read as a call by ``_tool_calls``)."""
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
        elif not _is_call_block(block):
            kind = block.get("type") if isinstance(block, dict) else type(block).__name__
            imported.drop(f"content blocks of type {kind!r} (no Chat form)")
    return parts
