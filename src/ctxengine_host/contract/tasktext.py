"""A user task too large for the budget: its head and tail verbatim, the middle summarized.

Engines keep the user's task message in every request. When that message alone
takes more than a quarter of the conversation budget, they send a shortened copy
(same ``message_uid``: it still represents the message) instead of dropping it:
the opening and the end verbatim (where instructions and the question usually
are), and between them a marked summary of the middle.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .messages import content_text

Message = dict[str, Any]

#: A task over this share of the conversation budget is shortened.
TASK_BUDGET_SHARE = 0.25
#: Shares of the shortened task's allowance: the verbatim head, the verbatim tail.
HEAD_SHARE = 0.45
TAIL_SHARE = 0.3
#: Opens the marker that stands for the task's middle.
TASK_MARKER_PREFIX = "[ctxengine: this task message is shortened"


def task_limit(budget_tokens: int) -> int:
    """The most tokens a task message may take of ``budget_tokens`` before it is shortened."""
    return max(1, int(budget_tokens * TASK_BUDGET_SHARE))


def shorten_task(
    message: Message,
    limit_tokens: int,
    count_text: Callable[[str], int],
    summarize: Callable[[str, int], str],
) -> Message:
    """A copy of ``message`` within about ``limit_tokens``: head, marked summary, tail.

    ``summarize(text, target_tokens)`` summarizes the middle. Messages whose content is
    not plain text (content parts) are returned unchanged.
    """
    text = message.get("content")
    if not isinstance(text, str):
        return message
    tokens = count_text(text)
    if tokens <= limit_tokens:
        return message
    chars_per_token = max(1.0, len(text) / max(1, tokens))
    head_chars = int(limit_tokens * HEAD_SHARE * chars_per_token)
    tail_chars = int(limit_tokens * TAIL_SHARE * chars_per_token)
    head, middle, tail = text[:head_chars], text[head_chars:-tail_chars], text[-tail_chars:]
    target = max(16, int(limit_tokens * (1 - HEAD_SHARE - TAIL_SHARE)) - 40)
    summary = summarize(middle, target).strip()
    marker = (
        f"{TASK_MARKER_PREFIX}: {count_text(middle)} tokens of its middle are summarized "
        f"here; the full text is stored]\n{summary}\n[end of the summary of the task's middle]"
    )
    return {**message, "content": f"{head}\n{marker}\n{tail}"}


def summarize_with(context_summarize: Callable[..., Any]) -> Callable[[str, int], str]:
    """An ``EngineContext.summarize``-style service as the plain callable ``shorten_task`` needs."""

    def summarize(text: str, target: int) -> str:
        result = context_summarize(text, target_tokens=target)
        return getattr(result, "text", None) or content_text({"content": str(result)})

    return summarize
