"""Claude Code session JSONL (``~/.claude/projects/<project>/<session>.jsonl``) -> Anthropic.

Each ``user`` / ``assistant`` line carries one API message (``message``) with the
line's ``uuid``, ``parentUuid`` and ``timestamp``; one assistant answer is written as
several lines (one per content block) sharing ``message.id``, and they are joined
again, also where a fast tool's result was written between two of them. The
conversation is the chain of ``parentUuid`` links ending at the last message, so branches
left by rewinds and edits are not mixed in; a compaction boundary links to the message
before it by ``logicalParentUuid``. Claude Code's own compaction
summary is dropped (reported): the engine under test sees the history it summarized; so
are its API error notices (``isApiErrorMessage``), which were never sent to the model. A
file written without ``parentUuid`` links is taken in line order.

The chain runs through one line of each answer and one result of its calls (which ones
depends on the order the tools finished in), so the answer's other lines and the results
of its other calls sit beside it: an answer's lines are taken back by ``message.id``, and
a result-only line by the open call it answers. Thinking blocks are kept with their
signatures. Sub-agent lines (``isSidechain``) belong to other conversations, but for a
sub-agent's own file (``<session>/subagents/agent-*.jsonl``), where every line is one. A
line whose parent is not in the file (a boundary's ``logicalParentUuid`` elsewhere, a
compaction agent's file starting with lines of the main session's, a file cut short) goes
on from the message written before it. The
chain runs back from the last message, or, where that misses the last message that is
not a local command, from that one: Claude Code 1.0 hung the commands the user ran
locally (``/clear``, ``!pytest``) on a meta note apart from the conversation; they are
kept where they were written.
"""

from __future__ import annotations

import bisect
import json
from datetime import UTC, datetime
from itertools import pairwise
from typing import Any

from .base import Imported, TranscriptError, as_blocks, read_json_or_jsonl
from .claude_code_context import (
    attachment_as_user_line,
    attachment_drop_reason,
    place_sent_prompts,
    sent_prompts,
)
from .pairing import pair_anthropic

ASSISTANT_BLOCKS = frozenset({"text", "thinking", "redacted_thinking", "tool_use"})
USER_BLOCKS = frozenset({"text", "image", "document", "tool_result"})
LINE_FIELDS = frozenset(
    {"type", "message", "uuid", "parentUuid", "logicalParentUuid", "timestamp", "isSidechain"}
)


def read(text: str) -> Imported:
    imported = Imported("claude-code", "anthropic")
    lines = [v for _, v in read_json_or_jsonl(text, "Claude Code session", imported)]
    if not all(isinstance(v, dict) for v in lines):
        raise TranscriptError("every line of a Claude Code session is a JSON object")
    lines = [attachment_as_user_line(v) or v for v in lines]
    sent = sent_prompts(lines, imported)
    position = {id(v): n for n, v in enumerate(lines)}
    by_uuid = {v["uuid"]: v for v in lines if isinstance(v.get("uuid"), str)}
    talk = [v for v in lines if v.get("type") in ("user", "assistant") and "message" in v]
    talk_ids = {id(v) for v in talk}
    for v in lines:
        if v.get("type") == "attachment":
            imported.drop(attachment_drop_reason(v))
        elif id(v) not in talk_ids:
            imported.drop(f"'{v.get('type')}' lines (not messages)")
    main = [v for v in talk if not v.get("isSidechain")] or talk  # else a sub-agent's file
    if len(main) < len(talk):
        imported.drop("sub-agent (sidechain) messages", len(talk) - len(main))
    if not main:
        raise TranscriptError("no user or assistant message lines; is this a Claude Code session?")
    if any(v.get("parentUuid") for v in main):
        preceding = _Preceding(lines, main)
        path = _chain(main[-1], by_uuid, preceding)
        talked = [v for v in main if not _local_command(v)]
        if talked and all(node is not talked[-1] for node in path):  # a local command's
            path = _chain(talked[-1], by_uuid, preceding)
        chain = {id(node) for node in path}
        chain |= _retried_beside(path, lines, {id(v) for v in main})
    else:  # a file written without links: its lines are the conversation, in order
        chain = {id(v) for v in main}
    chain |= _answers_beside(main, chain)
    chain |= _results_beside(main, chain)
    chain |= _local_commands_beside(main, chain, by_uuid)
    current = _parents_first([v for v in main if id(v) in chain], by_uuid)
    answers: list[tuple[int, int]] = []  # (line position, message index) of each answer
    if len(current) < len(main):
        imported.drop("messages on abandoned branches (rewinds, edits)", len(main) - len(current))
    for line in current:
        if line.get("isCompactSummary"):
            imported.drop("Claude Code's own compaction summaries (the history is kept)")
            continue
        if line.get("isApiErrorMessage"):
            imported.drop("API error placeholders (Claude Code's notices, never sent)")
            continue
        if set(line) - LINE_FIELDS:
            imported.drop("Claude Code line metadata (cwd, version, git branch, tool copies)")
        if line["type"] == "assistant":
            _add_answer_line(imported, line)
            if imported.messages and imported.messages[-1]["role"] == "assistant":
                answers.append((position[id(line)], len(imported.messages) - 1))
        else:
            _add_user_line(imported, line)
    place_sent_prompts(imported, sent, answers)
    for message in imported.messages:
        message.pop("_answer_id", None)
        if message.get("timestamp") is None:
            message.pop("timestamp", None)
    pair_anthropic(imported)
    return imported


def _add_answer_line(imported: Imported, line: dict[str, Any]) -> None:
    """An assistant line: a new message, or more blocks of the answer it belongs to (the
    last assistant message, with at most the results of its calls written after it)."""
    message = line["message"]
    blocks = _blocks(message.get("content"), ASSISTANT_BLOCKS, imported)
    answer_id = message.get("id")
    answer = _open_answer(imported.messages)
    if answer_id and answer is not None and answer.get("_answer_id") == answer_id:
        answer["content"].extend(blocks)
        return
    if blocks:
        imported.messages.append(
            {
                "role": "assistant",
                "content": blocks,
                "timestamp": line.get("timestamp"),
                "_answer_id": answer_id,
            }
        )


def _open_answer(messages: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The last assistant message when nothing but results of calls follows it."""
    for message in reversed(messages):
        if message["role"] == "assistant":
            return message
        if not _only_results(message["content"]):
            return None
    return None


def _add_user_line(imported: Imported, line: dict[str, Any]) -> None:
    """A user line: a new message, or more blocks of the user message it follows (Claude
    Code writes one line per tool result)."""
    content = line["message"].get("content")
    if isinstance(content, list):
        content = _blocks(content, USER_BLOCKS, imported)
    last = imported.messages[-1] if imported.messages else None
    if last is not None and last["role"] == "user":
        last["content"] = _results_first(as_blocks(last["content"]) + as_blocks(content))
        return
    message = {"role": "user", "content": content, "timestamp": line.get("timestamp")}
    imported.messages.append(message)


def _only_results(content: Any) -> bool:
    return (
        isinstance(content, list)
        and bool(content)
        and all(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)
    )


class _Preceding:
    """The last message line written before a given line (file order)."""

    def __init__(self, lines: list[dict[str, Any]], messages: list[dict[str, Any]]) -> None:
        self._position = {id(v): n for n, v in enumerate(lines)}
        self._messages = messages
        self._positions = [self._position[id(v)] for v in messages]

    def before(self, line: dict[str, Any]) -> dict[str, Any] | None:
        at = bisect.bisect_left(self._positions, self._position[id(line)])
        return self._messages[at - 1] if at else None


def _chain(
    last: dict[str, Any], by_uuid: dict[str, dict[str, Any]], preceding: _Preceding
) -> list[dict[str, Any]]:
    """The lines on the path from ``last`` back to the start, ``last`` first. A line whose
    parent is not in the file (a compaction boundary's ``logicalParentUuid``, a file cut
    short or started mid-session), or a compaction summary that starts a chain of its own
    (versions without the boundary line), goes on from the message written before it."""
    seen: set[int] = set()
    path: list[dict[str, Any]] = []
    node: dict[str, Any] | None = last
    while node is not None and id(node) not in seen:
        seen.add(id(node))
        path.append(node)
        parent = node.get("parentUuid") or node.get("logicalParentUuid")
        found = by_uuid.get(parent) if isinstance(parent, str) else None
        if found is None and (isinstance(parent, str) or node.get("isCompactSummary")):
            found = preceding.before(node)
        node = found
    return path


def _retried_beside(
    path: list[dict[str, Any]], lines: list[dict[str, Any]], messages: set[int]
) -> set[int]:
    """ids of the messages of branches the chain leaves through notices only, written
    after the notice and before the chain's next message.

    When a request fails, Claude Code writes an API error notice (a ``system`` line) under
    the last line; the retry's answer and the turn after it go on beside the notice, under
    the same parent, and the next notice (a stop hook's summary) and the user's next prompt
    hang under the first notice. Followed by its links, the chain skips the answer the
    model gave. A rewind or an edit leaves its branch through a message (the new prompt),
    and its abandoned messages were written before the branch that replaced them."""
    children: dict[str, list[dict[str, Any]]] = {}
    for line in lines:
        parent = line.get("parentUuid")
        if isinstance(parent, str):
            children.setdefault(parent, []).append(line)
    beside: set[int] = set()
    below: datetime | None = None  # when the chain's nearest message below was written
    for child, parent in pairwise(path):
        if id(child) in messages:
            below = _written(child)
            continue
        entered = _written(child)
        if entered is None or below is None or not isinstance(parent.get("uuid"), str):
            continue
        for sibling in children.get(parent["uuid"], ()):
            if sibling is child:
                continue
            for line in _subtree(sibling, children):
                written = _written(line)
                if id(line) in messages and written is not None and entered < written < below:
                    beside.add(id(line))
    return beside


def _subtree(root: dict[str, Any], children: dict[str, list[dict[str, Any]]]) -> list[Any]:
    """``root`` and every line under it by ``parentUuid`` links."""
    found: list[dict[str, Any]] = []
    seen: set[int] = set()
    stack = [root]
    while stack:
        line = stack.pop()
        if id(line) in seen:
            continue
        seen.add(id(line))
        found.append(line)
        uuid = line.get("uuid")
        stack.extend(children.get(uuid, ()) if isinstance(uuid, str) else ())
    return found


def _written(line: dict[str, Any]) -> datetime | None:
    """When ``line`` was written (its ``timestamp``), or None."""
    stamp = line.get("timestamp")
    if not isinstance(stamp, str):
        return None
    try:
        written = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return None
    return written if written.tzinfo is not None else written.replace(tzinfo=UTC)


def _parents_first(
    lines: list[dict[str, Any]], by_uuid: dict[str, dict[str, Any]]
) -> list[dict[str, Any]]:
    """``lines`` in file order, but for one written before its parent among them, which
    follows its parent: Claude Code may write a fast tool's result ahead of the answer
    line that called it (taken in file order, the result answered no call yet)."""
    taken = {id(v) for v in lines}
    done: set[int] = set()
    waiting: dict[int, list[dict[str, Any]]] = {}
    ordered: list[dict[str, Any]] = []
    for line in lines:
        parent = by_uuid.get(line.get("parentUuid") or "")
        if parent is not None and id(parent) in taken and id(parent) not in done:
            waiting.setdefault(id(parent), []).append(line)
            continue
        stack = [line]
        while stack:
            node = stack.pop()
            ordered.append(node)
            done.add(id(node))
            stack.extend(reversed(waiting.pop(id(node), [])))
    # A parent that never came (links in a cycle): its lines keep their place at the end.
    ordered += [v for v in lines if id(v) not in done]
    return ordered


def _answers_beside(main: list[dict[str, Any]], chain: set[int]) -> set[int]:
    """ids of the assistant lines off the chain that belong to an answer on it (the same
    ``message.id``): the other blocks of that one model response, never a branch."""
    answers = {v["message"].get("id") for v in main if id(v) in chain and v["type"] == "assistant"}
    answers.discard(None)
    return {
        id(v)
        for v in main
        if v["type"] == "assistant" and id(v) not in chain and v["message"].get("id") in answers
    }


#: How Claude Code writes what the user ran locally (slash commands, ``!`` shell lines).
_LOCAL_COMMAND_TAGS = (
    "<command-name>", "<command-message>", "<local-command-stdout>", "<local-command-stderr>",
    "<bash-input>", "<bash-stdout>", "<bash-stderr>",
)  # fmt: skip


def _local_command(line: dict[str, Any]) -> bool:
    """Whether ``line`` is a local command or its output, or the meta note before them."""
    content = line["message"].get("content")
    return bool(line.get("isMeta")) or (
        line["type"] == "user"
        and isinstance(content, str)
        and content.lstrip().startswith(_LOCAL_COMMAND_TAGS)
    )


def _local_commands_beside(
    main: list[dict[str, Any]], chain: set[int], by_uuid: dict[str, dict[str, Any]]
) -> set[int]:
    """ids of the local commands off the chain that hang on it through local commands only.

    Claude Code 1.0 hung each command the user ran locally (``/clear``, ``!pytest``) on the
    session's one meta note, not on the message before it: a side branch, yet no rewind
    left it, and the model saw it with the next request."""
    messages = {id(v) for v in main}
    beside: set[int] = set()
    for line in main:  # a parent is written before its children
        if id(line) in chain or not _local_command(line):
            continue
        parent = by_uuid.get(line.get("parentUuid") or "")
        seen: set[int] = set()
        while parent is not None and id(parent) not in messages and id(parent) not in seen:
            seen.add(id(parent))  # through lines that are not messages (system notes)
            parent = by_uuid.get(parent.get("parentUuid") or "")
        if parent is not None and (id(parent) in chain or id(parent) in beside):
            beside.add(id(line))
    return beside


def _results_beside(main: list[dict[str, Any]], chain: set[int]) -> set[int]:
    """ids of the result-only lines off the chain that answer the chain's open calls.

    Claude Code writes each result under its own call's line, so only one result of an
    answer's calls continues the chain. A line of an abandoned branch never answers a
    call the chain leaves open, so none is taken back."""
    on_chain = [v for v in main if id(v) in chain]
    called = {b.get("id") for v in on_chain for b in _typed(v, "tool_use")}
    answered = {b.get("tool_use_id") for v in on_chain for b in _typed(v, "tool_result")}
    beside: set[int] = set()
    for line in main:
        if id(line) in chain:
            continue
        ids = {b.get("tool_use_id") for b in _typed(line, "tool_result")}
        if _only_results(line["message"].get("content")) and ids <= called - answered:
            beside.add(id(line))
            answered |= ids
    return beside


def _typed(line: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    """The ``kind`` blocks of a line's message content."""
    content = line["message"].get("content")
    if not isinstance(content, list):
        return []
    return [b for b in content if isinstance(b, dict) and b.get("type") == kind]


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
        if kind == "tool_use" and not isinstance(block.get("id"), str):
            raise TranscriptError("a tool_use block without an id (the API gives each call one)")
        if kind == "tool_result" and isinstance(block.get("content"), list):
            block = {**block, "content": _result_parts(block["content"], imported)}
        if kind in allowed:
            kept.append(block)
        else:
            imported.drop(f"'{kind}' content blocks (server tools, no client form)")
    return kept


def _result_parts(parts: list[Any], imported: Imported) -> list[Any]:
    """A tool result's parts the API takes back (text, images); any other (a tool search's
    ``tool_reference``) as its JSON text, counted."""
    kept = []
    for part in parts:
        if isinstance(part, dict) and part.get("type") in ("text", "image"):
            kept.append(part)
        else:
            imported.repaired["tool result parts of no client form, kept as JSON text"] += 1
            kept.append({"type": "text", "text": json.dumps(part, ensure_ascii=False)})
    return kept
