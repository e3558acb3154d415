"""LangChain / LangGraph message lists -> Chat messages.

Reads a JSON list (or ``{"messages": [...]}``, a LangGraph state) of messages as
``langchain_core.messages.messages_to_dict`` writes them (``{"type", "data"}``), as
``langchain_core.load.dumpd`` writes them (``{"lc": 1, "id": [..., "AIMessage"],
"kwargs"}``), or as plain ``{"type": "human", "content": ...}`` dicts. A LangSmith run
(``{"inputs", "outputs"}``) is read as the conversation it holds.

What LangGraph streams is read as the conversation it streamed: successive states
(``stream_mode="values"``, one per line) are merged by message id as LangGraph's
``add_messages`` merges them, and the consecutive ``AIMessageChunk``s of one message
(``stream_mode="messages"``) are joined into it as ``AIMessageChunk.__add__`` joins them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
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


#: Report lines: the copies of a message that successive states repeat, and the chunks
#: joined into the message they stream.
STATE_REPEATS = "repeated messages of successive states (merged by id)"
CHUNKS_JOINED = "streamed chunks joined into the message they are part of"
#: How the message ids LangChain makes up begin (``run-<run id>``, ``lc_run-…``); the
#: others are the provider's.
OWN_ID_PREFIXES = ("run-", "lc_")


@dataclass
class _Found:
    """A message read, and whether it may be one streamed part of a message."""

    kind: str
    data: dict[str, Any]
    #: An ``AIMessageChunk`` outside a state: the chunks after it may be its other parts.
    streamed: bool


@dataclass
class _Streamed:
    """A message as its consecutive parts make it up (one part unless streamed)."""

    kind: str
    parts: list[dict[str, Any]]
    #: The message ids its streamed parts carry (at most one of LangChain's, one of the
    #: provider's); none: no chunk can go on it.
    ids: set[str] = field(default_factory=set)


def read(text: str) -> Imported:
    imported = Imported("langchain", "chat")
    entries = read_json_or_jsonl(text, "LangChain messages", imported)
    found: list[_Found] = []
    places: dict[str, int] = {}
    for _, value in entries:
        if isinstance(value, dict) and isinstance(value.get("messages"), list):
            _merge_state(found, places, value["messages"], imported)
            continue
        run = _is_run(value)
        listed = _run_messages(value) if run else value if isinstance(value, list) else [value]
        for item in listed:
            found.append(_found(item, len(found), not run))
    for index, (kind, data) in enumerate(_joined_streams(found, imported)):
        imported.messages.extend(_message(kind, data, imported, index))
    pair_chat(imported)
    return imported


def _found(value: Any, index: int, outside_state: bool) -> _Found:
    """A message read; an ``AIMessageChunk`` outside a state may be a streamed part."""
    kind, data = _unwrap(value, index)
    return _Found(kind, data, outside_state and _is_ai_chunk(value))


def _merge_state(
    found: list[_Found], places: dict[str, int], state: list[Any], imported: Imported
) -> None:
    """Add a LangGraph state's messages as ``add_messages`` adds them: a message whose id an
    earlier state held replaces it in place (a stream of states repeats every message,
    and a step may rewrite one), any other is added at the end."""
    for value in state:
        message = _found(value, len(found), False)
        key = _message_id(message.data)
        if key is not None and key in places:
            found[places[key]] = message
            imported.drop(STATE_REPEATS)
            continue
        if key is not None:
            places[key] = len(found)
        found.append(message)


def _message_id(data: dict[str, Any]) -> str | None:
    value = data.get("id")
    return str(value) if isinstance(value, str | int) and value != "" else None


def _is_ai_chunk(value: dict[str, Any]) -> bool:
    """An ``AIMessageChunk``: a part of a model's answer, if it was streamed."""
    name = (value.get("id") or [""])[-1] if value.get("lc") == 1 else value.get("type")
    return name == "AIMessageChunk"


def _joined_streams(found: list[_Found], imported: Imported) -> list[tuple[str, dict[str, Any]]]:
    """The messages, the consecutive streamed chunks of each joined into it (counted)."""
    messages: list[_Streamed] = []
    for item in found:
        if messages and _continues(messages[-1], item):
            messages[-1].parts.append(item.data)
            messages[-1].ids.add(str(item.data["id"]))
            imported.drop(CHUNKS_JOINED)
            continue
        key = _message_id(item.data)
        ids = {key} if item.streamed and key is not None else set()
        messages.append(_Streamed(item.kind, [item.data], ids))
    return [(m.kind, _joined(m.parts)) for m in messages]


def _continues(message: _Streamed, item: _Found) -> bool:
    """Whether a streamed chunk is the next part of the streamed message before it.

    The parts of a message carry its id: LangChain's own (``run-…``) where the provider
    gave none, and some (OpenAI's Responses API, Anthropic's first event) the provider's:
    a chunk goes on a message whose ids hold its own, or none of its kind.
    """
    key = _message_id(item.data)
    if not (item.streamed and message.ids and key is not None):
        return False
    own = key.startswith(OWN_ID_PREFIXES)
    return key in message.ids or all(i.startswith(OWN_ID_PREFIXES) != own for i in message.ids)


def _joined(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """One message from its streamed parts, as ``AIMessageChunk.__add__`` joins them:
    texts concatenated, tool-call chunks joined by ``index`` and then parsed."""
    if len(parts) == 1:
        return parts[0]
    data: dict[str, Any] = {}
    for part in parts:
        for key, value in part.items():
            join = _joined_content if key == "content" else _merged
            data[key] = join(data[key], value) if key in data else value
    if data.get("tool_call_chunks"):
        data.update(_parsed_calls(data["tool_call_chunks"]))
    return data


def _joined_content(left: Any, right: Any) -> Any:
    """Two parts' content: texts concatenated, or lists of blocks merged (LangChain's
    ``merge_content``; a text beside blocks is a block of its own)."""
    if isinstance(left, str) and isinstance(right, str):
        return left + right
    return _merged_lists(_blocks(left), _blocks(right))


def _blocks(content: Any) -> list[Any]:
    if isinstance(content, list):
        return content
    return [content] if content else []


#: Fields that name a value rather than hold a part of it: kept from the first part.
NAMING = frozenset({"id", "type", "index", "name"})


def _merged(left: Any, right: Any) -> Any:
    """Two parts of one streamed value (LangChain's ``merge_dicts`` / ``merge_lists``):
    texts concatenated, dicts merged key by key, list items with the same ``index``
    merged; an empty part adds nothing, and of other values the later is kept."""
    if right is None or right == "":
        return left
    if left is None or left == "":
        return right
    if isinstance(left, str) and isinstance(right, str):
        return left + right
    if isinstance(left, dict) and isinstance(right, dict):
        return _merged_dicts(left, right)
    if isinstance(left, list) and isinstance(right, list):
        return _merged_lists(left, right)
    return right


def _merged_dicts(left: dict[str, Any], right: dict[str, Any]) -> dict[str, Any]:
    merged = dict(left)
    for key, value in right.items():
        named = key in NAMING and merged.get(key) not in (None, "")
        merged[key] = merged[key] if named else _merged(merged.get(key), value)
    return merged


def _merged_lists(left: list[Any], right: list[Any]) -> list[Any]:
    merged = list(left)
    for item in right:
        place = _same_index(merged, item)
        if place is None:
            merged.append(item)
        else:
            merged[place] = _merged_dicts(merged[place], item)
    return merged


def _same_index(items: list[Any], item: Any) -> int | None:
    """Where an earlier part of ``item`` is: the item of the same ``index`` (an int, or
    LangChain's ``lc_…`` block id) whose id, if both have one, is the same."""
    index = item.get("index") if isinstance(item, dict) else None
    if not (isinstance(index, int) or (isinstance(index, str) and index.startswith("lc_"))):
        return None
    for place, earlier in enumerate(items):
        if isinstance(earlier, dict) and earlier.get("index") == index:
            ids = [earlier.get("id"), item.get("id")]
            if None in ids or "" in ids or ids[0] == ids[1]:
                return place
    return None


def _parsed_calls(chunks: list[Any]) -> dict[str, list[dict[str, Any]]]:
    """A streamed message's calls from its joined tool-call chunks, as LangChain parses
    them (arguments that are not a JSON object, as where a stream was cut short, make an
    invalid call); a call keeps its arguments as the model wrote them."""
    calls: dict[str, list[dict[str, Any]]] = {"tool_calls": [], "invalid_tool_calls": []}
    for chunk in chunks:
        args = chunk.get("args") or ""
        try:
            parsed = json.loads(args) if args else {}
        except json.JSONDecodeError:
            parsed = None
        call = {"id": chunk.get("id"), "name": chunk.get("name") or ""}
        if isinstance(parsed, dict):
            calls["tool_calls"].append({**call, "args": args or "{}"})
        else:
            calls["invalid_tool_calls"].append({**call, "args": args})
    return calls


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
