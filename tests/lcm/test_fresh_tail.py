"""The default fresh tail leaves a sweep room to reach its target beside the summaries."""

from __future__ import annotations

from ctxengine_lcm.compaction import fresh_tail_start
from ctxengine_lcm.config import LcmConfig
from ctxengine_lcm.store import ContextItem

#: A 32k window's compaction threshold.
THRESHOLD = 24_576


def test_a_sweep_can_reach_its_target_with_the_summaries_at_their_budget():
    # An agent's turns: a user message, then tool calls and results of a couple of hundred
    # tokens each (the generated 2,000-turn sessions average about 195 per message).
    config = LcmConfig()
    budget = int(config.summary_budget_fraction * THRESHOLD)
    summaries = [ContextItem(n, "summary", n, budget // 5, 1, "") for n in range(5)]
    roles = ["user", "assistant", "tool", "assistant", "tool", "assistant"]
    messages = [
        ContextItem(5 + n, "message", 100 + n, 60 if roles[n % 6] == "user" else 220, -1,
                    roles[n % 6])
        for n in range(150)
    ]  # fmt: skip
    items = summaries + messages
    tail = sum(i.token_count for i in items[fresh_tail_start(items, config, THRESHOLD) :])
    target = config.compact_target_fraction * THRESHOLD
    # Before: 64 messages, about 12,300 tokens (the tail's cap): summaries and tail alone
    # passed the target, so no sweep could reach it.
    assert tail + budget <= target


def steps(*shape: tuple[str, int]) -> list[ContextItem]:
    """A task message and a summary, then raw messages of (role, tokens)."""
    head = [ContextItem(0, "message", 1, 77, -1, "user"), ContextItem(1, "summary", 1, 370, 0, "")]
    return head + [
        ContextItem(2 + n, "message", 2 + n, tokens, -1, role)
        for n, (role, tokens) in enumerate(shape)
    ]


def test_a_bounded_tail_leaves_a_large_call_to_be_summarized_with_its_result():
    """A real single-loop session in an 8k window (3,170 tokens of room): a tool call
    writing a whole file, its result, then smaller steps. The tail stops at the result;
    taking the call in would put every raw message in the tail."""
    config = LcmConfig()
    shape = [("assistant", 1_066), ("tool", 22), ("assistant", 273), ("tool", 33),
             ("assistant", 719), ("tool", 23), ("assistant", 273), ("tool", 33)]  # fmt: skip
    items = steps(*shape)
    assert fresh_tail_start(items, config, 3_170) == 2  # the call taken in
    start = fresh_tail_start(items, config, 3_170, bounded=True)
    assert start == 4  # after the call's result
    assert sum(i.token_count for i in items[start:]) <= config.fresh_tail_max_fraction * 3_170


def test_a_bounded_tail_takes_a_call_in_when_it_fits_and_keeps_the_newest_with_its_call():
    # The count bound (3 messages) stops the tail at a result whose call fits the tokens.
    items = steps(("assistant", 200), ("tool", 22), ("assistant", 273), ("tool", 33))
    assert fresh_tail_start(items, LcmConfig(fresh_tail_messages=3), 10_000, bounded=True) == 2
    # The newest message is a result: its call stays with it whatever its size.
    items = steps(("assistant", 100), ("assistant", 2_000), ("tool", 40))
    assert fresh_tail_start(items, LcmConfig(), 1_000, bounded=True) == 3
