"""Claude Code session JSONL (``~/.claude/projects/<project>/<session>.jsonl``) -> Anthropic.

Each ``user`` / ``assistant`` line carries one API message (``message``) with the
line's ``uuid``, ``parentUuid`` and ``timestamp``; one assistant answer is written as
several lines (one per content block) sharing ``message.id``, and they are joined
again. The conversation is the chain of ``parentUuid`` links ending at the last
message (``logicalParentUuid`` bridges a compaction boundary), so branches left by
rewinds and edits are not mixed in; sub-agent lines (``isSidechain``) belong to other
conversations. The result of a call hangs on the line of that call, so when an answer
makes several calls the results of all but the last sit beside the chain: they are taken
back in. Thinking blocks are kept with their signatures.
"""

from __future__ import annotations

from typing import Any

from .base import Imported, TranscriptError, read_json_or_jsonl
from .pairing import pair_anthropic

ASSISTANT_BLOCKS = frozenset({"text", "thinking", "redacted_thinking", "tool_use"})
USER_BLOCKS = frozenset({"text", "image", "document", "tool_result"})
LINE_FIELDS = frozenset(
    {"type", "message", "uuid", "parentUuid", "logicalParentUuid", "timestamp", "isSidechain"}
)


def read(text: str) -> Imported:
    imported = Imported("claude-code", "anthropic")
    lines = [v for _, v in read_json_or_jsonl(text, "Claude Code session")]
    if not all(isinstance(v, dict) for v in lines):
        raise TranscriptError("every line of a Claude Code session is a JSON object")
    by_uuid = {v["uuid"]: v for v in lines if isinstance(v.get("uuid"), str)}
    talk = [v for v in lines if v.get("type") in ("user", "assistant") and "message" in v]
    for v in lines:
        if v not in talk:
            imported.drop(f"'{v.get('type')}' lines (not messages)")
    main = [v for v in talk if not v.get("isSidechain")]
    if len(main) < len(talk):
        imported.drop("sub-agent (sidechain) messages", len(talk) - len(main))
    if not main:
        raise TranscriptError("no user or assistant message lines; is this a Claude Code session?")
    chain = _chain(main[-1], by_uuid)
    chain |= _results_beside(main, chain, by_uuid)
    current = [v for v in main if id(v) in chain]
    if len(current) < len(main):
        imported.drop("messages on abandoned branches (rewinds, edits)", len(main) - len(current))
    previous_id = None
    for line in current:
        if set(line) - LINE_FIELDS:
            imported.drop("Claude Code line metadata (cwd, version, git branch, tool copies)")
        message = line["message"]
        if line["type"] == "assistant":
            blocks = _blocks(message.get("content"), ASSISTANT_BLOCKS, imported)
            last = imported.messages[-1] if imported.messages else None
            same_message = previous_id and message.get("id") == previous_id
            if same_message and last is not None and last["role"] == "assistant":
                last["content"].extend(blocks)
                continue
            previous_id = message.get("id")
            if blocks:
                imported.messages.append(
                    {"role": "assistant", "content": blocks, "timestamp": line.get("timestamp")}
                )
            continue
        previous_id = None
        content = message.get("content")
        if isinstance(content, list):
            content = _blocks(content, USER_BLOCKS, imported)
        last = imported.messages[-1] if imported.messages else None
        if last is not None and last["role"] == "user":  # one line per tool result: rejoin
            last["content"] = _results_first(_as_blocks(last["content"]) + _as_blocks(content))
            continue
        imported.messages.append(
            {"role": "user", "content": content, "timestamp": line.get("timestamp")}
        )
    for message in imported.messages:
        if message.get("timestamp") is None:
            message.pop("timestamp", None)
    pair_anthropic(imported)
    return imported


def _chain(last: dict[str, Any], by_uuid: dict[str, dict[str, Any]]) -> set[int]:
    """ids of the lines on the path from ``last`` back to the start."""
    seen: set[int] = set()
    node: dict[str, Any] | None = last
    while node is not None and id(node) not in seen:
        seen.add(id(node))
        parent = node.get("parentUuid") or node.get("logicalParentUuid")
        node = by_uuid.get(parent) if isinstance(parent, str) else None
    return seen


def _results_beside(
    main: list[dict[str, Any]], chain: set[int], by_uuid: dict[str, dict[str, Any]]
) -> set[int]:
    """ids of the result-only lines hung on a chain line that answer chain calls left open.

    Claude Code writes the calls of one answer as a chain of lines and each result under
    its own call's line, so only the last call's result continues the chain. A line of an
    abandoned branch never answers a call the chain leaves open, so none is taken back.
    """
    on_chain = [v for v in main if id(v) in chain]
    called = {b.get("id") for v in on_chain for b in _typed(v, "tool_use")}
    answered = {b.get("tool_use_id") for v in on_chain for b in _typed(v, "tool_result")}
    beside: set[int] = set()
    for line in main:
        parent = by_uuid.get(line.get("parentUuid") or "")
        if id(line) in chain or parent is None or id(parent) not in chain:
            continue
        content = line["message"].get("content")
        results = _typed(line, "tool_result")
        ids = {b.get("tool_use_id") for b in results}
        if results and len(results) == len(content) and ids <= called - answered:
            beside.add(id(line))
            answered |= ids
    return beside


def _typed(line: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    """The ``kind`` blocks of a line's message content."""
    content = line["message"].get("content")
    if not isinstance(content, list):
        return []
    return [b for b in content if isinstance(b, dict) and b.get("type") == kind]


def _as_blocks(content: Any) -> list[Any]:
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content)


def _results_first(blocks: list[Any]) -> list[Any]:
    """Anthropic wants a user message's tool_result blocks before its other blocks."""
    results = [b for b in blocks if isinstance(b, dict) and b.get("type") == "tool_result"]
    return results + [b for b in blocks if b not in results]


def _blocks(content: Any, allowed: frozenset[str], imported: Imported) -> list[Any]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    kept = []
    for block in content or ():
        kind = block.get("type") if isinstance(block, dict) else None
        if kind in allowed:
            kept.append(block)
        else:
            imported.drop(f"'{kind}' content blocks (server tools, no client form)")
    return kept
