"""Level 2 of the escalation: a deterministic truncation that always fits the target."""

from __future__ import annotations

from ..tokens import TokenCounter

TRUNCATION_MARK = "\n[… truncated to fit]"


def truncate_to_tokens(text: str, max_tokens: int, counter: TokenCounter) -> str:
    """The longest prefix of ``text`` (cut at a line end when one is near) within ``max_tokens``.

    A marker says text was cut. The loop only ever shortens, so it ends.
    """
    if max_tokens <= 0 or not text:
        return ""
    if counter.count_text(text) <= max_tokens:
        return text
    mark_tokens = counter.count_text(TRUNCATION_MARK)
    mark = TRUNCATION_MARK if max_tokens > 2 * mark_tokens else ""
    room = max_tokens - (mark_tokens if mark else 0)
    ids = counter.encoder.encode(text, disallowed_special=())
    while room > 0:
        head = counter.encoder.decode(ids[:room])
        line_end = head.rfind("\n")
        if line_end > len(head) * 0.6:
            head = head[:line_end]
        candidate = head.rstrip() + mark
        if counter.count_text(candidate) <= max_tokens:
            return candidate
        room -= max(1, room // 20)
    return ""
