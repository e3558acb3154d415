"""Deterministic sample conversations the kit feeds engines.

They mix plain turns with tool-call groups so that a compaction that splits a
tool call from its result is caught, and each message carries a marker so that
messages leaking between sessions can be traced.
"""

from __future__ import annotations

import json
import random
from typing import Any

from ..contract.messages import content_text

Message = dict[str, Any]

_WORDS = [
    "context",
    "window",
    "budget",
    "summary",
    "token",
    "engine",
    "message",
    "session",
    "history",
    "tool",
    "result",
    "compact",
    "select",
    "retrieve",
    "index",
    "verbatim",
    "assistant",
    "request",
    "provider",
    "latency",
    "cache",
    "prompt",
    "thread",
    "store",
    "transcript",
    "rollback",
    "branch",
    "model",
    "threshold",
    "marker",
]


def _sentence(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(words)).capitalize() + "."


def _text(rng: random.Random, sentences: int, marker: str) -> str:
    body = " ".join(_sentence(rng, rng.randint(8, 16)) for _ in range(sentences))
    return f"[{marker}] {body}"


def user_message(marker: str, turn: int, seed: int = 0) -> Message:
    """One user message tagged with ``marker``."""
    rng = random.Random(f"{seed}-{marker}-user-{turn}")
    return {"role": "user", "content": _text(rng, 3, marker)}


def turn_messages(marker: str, turn: int, seed: int = 0) -> list[Message]:
    """The assistant side of one turn: every third turn uses a tool first."""
    rng = random.Random(f"{seed}-{marker}-turn-{turn}")
    out: list[Message] = []
    if turn % 3 == 2:
        call_id = f"call_{marker}_{turn}"
        out.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {
                            "name": "read_file",
                            "arguments": json.dumps({"path": f"notes/{marker}-{turn}.txt"}),
                        },
                    }
                ],
            }
        )
        out.append({"role": "tool", "tool_call_id": call_id, "content": _text(rng, 6, marker)})
    out.append({"role": "assistant", "content": _text(rng, 4, marker)})
    return out


def conversation(
    turns: int = 24, marker: str = "kit", system: bool = True, seed: int = 0
) -> list[Message]:
    """A whole conversation: an optional system prompt and ``turns`` user/assistant turns."""
    messages: list[Message] = []
    if system:
        messages.append({"role": "system", "content": "You are a careful coding assistant."})
    for turn in range(turns):
        messages.append(user_message(marker, turn, seed))
        messages.extend(turn_messages(marker, turn, seed))
    return messages


def foreign_markers(messages: list[Message], own: str, markers: set[str]) -> set[str]:
    """Markers of sessions other than ``own`` that appear in the text of ``messages``."""
    text = "\n".join(content_text(m) for m in messages if isinstance(m, dict))
    return {m for m in markers if m != own and f"[{m}]" in text}


def long_tool_loop(tool_calls: int) -> list[list[Message]]:
    """A single-task agent session as atomic blocks: system, task, then the tool loop."""
    from ..contract.messages import atomic_blocks
    from ..replay.generator.realistic import generate_realistic_session

    messages = generate_realistic_session(max(40, tool_calls), seed=0).messages
    return atomic_blocks(messages)
