"""The host's built-in last-resort engine, used only when ``legacy`` is not installed.

It drops the oldest messages until the history fits, keeping the system prompt,
the task (the first user message) and tool-call groups intact. ``ctxengine doctor``
warns when it is in use.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .._version import __version__
from ..contract.engine import ContextEngine
from ..contract.messages import atomic_blocks, flatten, leading_system
from ..contract.usage import apply_usage

Message = dict[str, Any]

LAST_RESORT_NAME = "builtin-last-resort"


def keep_newest_that_fit(
    messages: list[Message], budget_tokens: int, count: Callable[[list[Message]], int]
) -> list[Message]:
    """Leading system messages, the task, and the newest atomic blocks within ``budget_tokens``.

    The task is the first user message: kept even when one long tool loop is the whole
    history (the commonest agent shape), so the request still says what it is for and
    starts with the user. Whole blocks only: a tool call never loses its results. The
    newest block is always kept, even when it alone is over budget: an empty request
    would be worse than an oversized one the caller can report.
    """
    head = leading_system(messages)
    blocks = atomic_blocks(messages[len(head) :])
    task = blocks.pop(0) if blocks and blocks[0][0].get("role") == "user" else []
    kept: list[list[Message]] = []
    used = count(head) + count(task)
    for block in reversed(blocks):
        cost = count(block)
        if kept and used + cost > budget_tokens:
            break
        kept.append(block)
        used += cost
    kept.reverse()
    return head + task + flatten(kept)


class SlidingWindowEngine(ContextEngine):
    """Keep the system prompt and the newest messages that fit under the threshold."""

    name = "sliding-window"
    version = __version__
    display_name = "Sliding window"

    def update_from_response(self, usage: dict[str, Any]) -> None:
        apply_usage(self, usage)

    def should_compress(self, prompt_tokens: int | None = None) -> bool:
        tokens = self.last_prompt_tokens if prompt_tokens is None else prompt_tokens
        return bool(self.threshold_tokens) and tokens >= self.threshold_tokens

    def compress(
        self,
        messages: list[Message],
        current_tokens: int | None = None,
        focus_topic: str | None = None,
        force: bool = False,
    ) -> list[Message]:
        target = int(self.threshold_tokens * 0.6) if self.threshold_tokens else 2048
        kept = keep_newest_that_fit(messages, target, self._count)
        if len(kept) < len(messages):
            self.compression_count += 1
        return kept

    def _count(self, messages: list[Message]) -> int:
        if self.context is not None:
            return self.context.count_tokens(messages)
        return sum(len(str(m.get("content") or "")) // 4 + 4 for m in messages)


class LastResortEngine(SlidingWindowEngine):
    """The engine of last resort, built into the host."""

    name = LAST_RESORT_NAME
    display_name = "Built-in last resort"
