"""Where the protected head ends and the protected tail starts.

Boundaries fall only between atomic blocks (an assistant message with tool
calls stays with its tool results). The head ends on a non-user message and
the tail starts on an assistant message, so that the user-role summary placed
between them keeps user and assistant turns alternating.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

Message = dict[str, Any]


@dataclass(frozen=True)
class Plan:
    head_end: int
    tail_start: int
    restate_index: int | None  # the last user message when it is not in the tail


def block_starts(messages: Sequence[Message]) -> list[int]:
    """Indices where an atomic block starts (tool results join the call before them).

    The one place that says what legacy treats as an atomic unit; message shapes that
    must stay together (a reasoning item with its call, thinking blocks with their tool
    turn) extend it here.
    """
    starts: list[int] = []
    open_call = False
    for index, message in enumerate(messages):
        role = message.get("role")
        if role == "tool" and open_call:
            continue
        starts.append(index)
        open_call = role == "assistant" and bool(message.get("tool_calls"))
    return starts


def _last_index(messages: Sequence[Message], role: str) -> int | None:
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].get("role") == role:
            return index
    return None


def _start_of_block(starts: list[int], index: int) -> int:
    return max(s for s in starts if s <= index)


def plan_boundaries(
    messages: Sequence[Message],
    costs: Sequence[int],
    *,
    protect_first_n: int,
    tail_budget: int,
    tail_min_messages: int,
) -> Plan:
    """Choose the head and tail; the middle between them is what gets summarized."""
    n = len(messages)
    starts = [*block_starts(messages), n]
    head_end = 0
    while head_end < n and messages[head_end].get("role") == "system":
        head_end += 1
    protected = head_end + protect_first_n
    for start in starts:
        if start >= protected:
            head_end = max(head_end, start)
            break
    else:
        head_end = n
    while 0 < head_end < n and messages[head_end - 1].get("role") == "user":
        head_end = min(s for s in starts if s > head_end)

    tail_start = n
    used = 0
    for start in reversed(starts[:-1]):
        if start < head_end:
            break
        block_cost = sum(costs[start:tail_start])
        if (
            tail_start < n
            and used + block_cost > tail_budget
            and n - tail_start >= tail_min_messages
        ):
            break
        tail_start, used = start, used + block_cost

    last_assistant = _last_index(messages, "assistant")
    if last_assistant is not None and head_end <= last_assistant < tail_start:
        tail_start = _start_of_block(starts, last_assistant)
    restate = None
    last_user = _last_index(messages, "user")
    if last_user is not None and head_end <= last_user < tail_start:
        if sum(costs[last_user:]) <= 2 * tail_budget:
            tail_start = last_user
        else:
            restate = last_user
    while tail_start > head_end and messages[tail_start].get("role") != "assistant":
        tail_start = _start_of_block(starts, tail_start - 1)
    tail_start = max(tail_start, head_end)
    if restate is not None and restate >= tail_start:
        restate = None
    return Plan(head_end=head_end, tail_start=tail_start, restate_index=restate)
