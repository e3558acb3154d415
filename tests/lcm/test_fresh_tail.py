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
