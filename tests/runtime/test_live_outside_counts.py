"""Counts of messages outside the live view (an engine's summaries): remembered by what they
say, so a summary sent again costs no count and a changed one is never given a stale count."""

from __future__ import annotations

from typing import Any

from ctxengine_host.runtime.live import LiveView
from ctxengine_host.tokens import TokenCounter


class CountingCounter(TokenCounter):
    """The real counter, noting how many messages it really counted."""

    def __init__(self) -> None:
        super().__init__("gpt-4")
        self.counted = 0

    def count_message(self, message: dict[str, Any]) -> int:
        self.counted += 1
        return super().count_message(message)


def summary(text: str) -> dict[str, Any]:
    return {"role": "user", "content": f"[Summary sum_1]\n{text}"}


def test_a_summary_sent_again_is_counted_once_and_a_changed_one_again():
    counter = CountingCounter()
    view = LiveView(counter, strict_alternation=False)
    first = summary("- task: migrate the billing exporter to port 9464 " * 40)
    tokens, _, _ = view.resolve([first])
    again, _, _ = view.resolve([dict(first)])  # rebuilt by the engine: a new, equal dict
    assert again == tokens == TokenCounter("gpt-4").count_message(first)
    assert counter.counted == 1
    changed = summary("- task: migrate the billing exporter to port 9465 " * 40)
    after, _, _ = view.resolve([changed])
    assert after == TokenCounter("gpt-4").count_message(changed)
    assert counter.counted == 2


def test_a_message_with_structured_fields_is_still_counted_per_version():
    counter = CountingCounter()
    view = LiveView(counter, strict_alternation=False)
    parts = {"role": "user", "content": [{"type": "text", "text": "look at this log " * 20}]}
    tokens, _, _ = view.resolve([parts])
    parts["content"][0]["text"] += "and this one"  # changed in place: a new version
    grown, _, _ = view.resolve([parts])
    assert grown > tokens
    assert grown == TokenCounter("gpt-4").count_message(parts)
