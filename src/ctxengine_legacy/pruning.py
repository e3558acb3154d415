"""Cheap pruning before any summary: lossless or near-lossless rewrites of old messages.

- identical long tool outputs: earlier copies point at the latest one;
- old long tool outputs: a one-line description naming the tool, its arguments,
  the output's size and its most salient lines;
- long tool-call arguments: long string values shortened, still valid JSON.

Every rewrite copies the message (``message_uid`` and the rest are kept).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ctxengine_host.contract.messages import content_text
from ctxengine_host.summarizer import salient_lines
from ctxengine_host.summarizer.render import brief_arguments

Message = dict[str, Any]

#: Long string values inside tool-call arguments keep this many characters.
KEEP_ARGUMENT_CHARS = 200
#: The fewest tokens a rewritten message costs (a description, a pointer, short arguments).
REWRITE_TOKENS = 40
#: Lists inside tool-call arguments keep this many items.
KEEP_ARGUMENT_ITEMS = 20


@dataclass
class PruneStats:
    deduplicated: int = 0
    shortened_outputs: int = 0
    shortened_arguments: int = 0

    @property
    def changed(self) -> bool:
        return bool(self.deduplicated or self.shortened_outputs or self.shortened_arguments)


def tool_calls_by_id(messages: list[Message]) -> dict[str, tuple[str, Any]]:
    """Provider tool-call id -> (tool name, raw arguments)."""
    calls: dict[str, tuple[str, Any]] = {}
    for message in messages:
        for call in message.get("tool_calls") or ():
            if isinstance(call, dict) and call.get("id"):
                fn = call.get("function") or {}
                calls[call["id"]] = (str(fn.get("name", "tool")), fn.get("arguments", ""))
    return calls


def _describe_call(message: Message, calls: dict[str, tuple[str, Any]]) -> str:
    name, arguments = calls.get(message.get("tool_call_id", ""), (message.get("name"), ""))
    return f"{name or 'tool'}({brief_arguments(arguments, 100)})"


def deduplicate_tool_outputs(
    messages: list[Message], span: range, min_tokens: int, cost: Callable[[int], int]
) -> tuple[list[Message], int]:
    """Replace earlier copies (inside ``span``) of identical long tool outputs with a pointer."""
    latest: dict[str, int] = {}
    for index, message in enumerate(messages):
        if message.get("role") == "tool":
            latest[content_text(message)] = index
    calls = tool_calls_by_id(messages)
    out = list(messages)
    count = 0
    for index in span:
        message = messages[index]
        if message.get("role") != "tool":
            continue
        text = content_text(message)
        if latest[text] != index and cost(index) >= min_tokens:
            out[index] = {
                **message,
                "content": f"[Duplicate output of {_describe_call(message, calls)} omitted: "
                "identical to a later result]",
            }
            count += 1
    return out, count


def describe_tool_output(message: Message, calls: dict[str, tuple[str, Any]], tokens: int) -> str:
    """One line naming the tool, what it was asked, the output's size and its key lines."""
    text = content_text(message)
    lines = [line for line in text.splitlines() if line.strip()]
    key = " | ".join(salient_lines(text, max_lines=2, max_chars=140))
    return (
        f"[Pruned tool output] {_describe_call(message, calls)} returned {len(lines)} lines "
        f"(~{tokens} tokens). Key lines: {key or '(none)'}"
    )


def shorten_arguments(arguments: Any, limit: int) -> Any:
    """Arguments no longer than ``limit`` characters, as valid JSON text."""
    if not isinstance(arguments, str) or len(arguments) <= limit:
        return arguments
    try:
        data = json.loads(arguments)
    except ValueError:
        data = None
    if data is not None:
        text = json.dumps(_shorten_value(data), ensure_ascii=False)
        if len(text) <= limit:
            return text
    preview = arguments[: min(KEEP_ARGUMENT_CHARS, limit // 2)]
    return json.dumps({"_shortened": preview + "…", "_original_chars": len(arguments)})


def _shorten_value(value: Any) -> Any:
    if isinstance(value, str) and len(value) > KEEP_ARGUMENT_CHARS:
        return value[:KEEP_ARGUMENT_CHARS] + f"…[+{len(value) - KEEP_ARGUMENT_CHARS} chars]"
    if isinstance(value, list):
        items = [_shorten_value(v) for v in value[:KEEP_ARGUMENT_ITEMS]]
        if len(value) > KEEP_ARGUMENT_ITEMS:
            items.append(f"…[+{len(value) - KEEP_ARGUMENT_ITEMS} items]")
        return items
    if isinstance(value, dict):
        return {k: _shorten_value(v) for k, v in value.items()}
    return value


def pruning_floor(
    messages: list[Message],
    span: range,
    costs: list[int],
    *,
    output_tokens: int,
    dedupe_min_tokens: int,
    argument_chars: int,
) -> int:
    """About the tokens left after :func:`prune`, cheaply (no rewriting), erring low."""
    floor = sum(costs) + 3
    shortest = min(output_tokens, dedupe_min_tokens)
    for index in span:
        message = messages[index]
        long_output = message.get("role") == "tool" and costs[index] >= shortest
        if long_output or _has_long_arguments(message, argument_chars):
            floor -= max(0, costs[index] - REWRITE_TOKENS)
    return floor


def _has_long_arguments(message: Message, limit: int) -> bool:
    return any(
        len(str((c.get("function") or {}).get("arguments", ""))) > limit
        for c in message.get("tool_calls") or ()
        if isinstance(c, dict)
    )


def prune(
    messages: list[Message],
    span: range,
    cost: Callable[[int], int],
    *,
    output_tokens: int,
    dedupe_min_tokens: int,
    argument_chars: int,
) -> tuple[list[Message], PruneStats]:
    """Prune the messages in ``span`` (between the protected head and tail)."""
    stats = PruneStats()
    out, stats.deduplicated = deduplicate_tool_outputs(messages, span, dedupe_min_tokens, cost)
    calls = tool_calls_by_id(messages)
    for index in span:
        message = out[index]
        role = message.get("role")
        if role == "tool" and out[index] is messages[index] and cost(index) > output_tokens:
            out[index] = {**message, "content": describe_tool_output(message, calls, cost(index))}
            stats.shortened_outputs += 1
        elif role == "assistant" and message.get("tool_calls"):
            new_calls = []
            changed = False
            for call in message["tool_calls"]:
                fn = call.get("function") if isinstance(call, dict) else None
                if fn and isinstance(fn.get("arguments"), str):
                    shortened = shorten_arguments(fn["arguments"], argument_chars)
                    if shortened != fn["arguments"]:
                        call = {**call, "function": {**fn, "arguments": shortened}}
                        changed = True
                new_calls.append(call)
            if changed:
                out[index] = {**message, "tool_calls": new_calls}
                stats.shortened_arguments += 1
    return out, stats
