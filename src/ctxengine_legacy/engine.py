"""The default engine ``legacy``: head and tail kept, the middle replaced by one rolling summary.

``compress`` first prunes cheaply (duplicate and old long tool outputs, long
tool-call arguments); when that alone brings the history well under the
threshold it stops there. Otherwise the middle between the protected head and
the token-budgeted tail is summarized through the host's summarizer service,
merged with the previous summary, and emitted as one user-role message.
``select_context``, ``ingest`` and ``on_turn_complete`` are not overridden.
"""

from __future__ import annotations

import functools
import time
from typing import Any

from ctxengine_host.context import EngineContext
from ctxengine_host.engine import ContextEngine
from ctxengine_host.messages import content_text
from ctxengine_host.models import CompactResult, SummaryResult
from ctxengine_host.summarizer import SummarizerError, SummarizerService
from ctxengine_host.tokens import REPLY_PRIMER_TOKENS, TokenCounter
from ctxengine_host.usage import apply_usage

from ._version import __version__
from .boundaries import Plan, plan_boundaries
from .config import LegacyConfig
from .pruning import deduplicate_tool_outputs, prune, pruning_floor
from .summary_message import build_summary_message, is_summary_message, summary_body

Message = dict[str, Any]

#: The smallest summary budget worth asking for.
MIN_SUMMARY_TOKENS = 64
#: A paused engine retries once the prompt has grown by this share of the threshold.
RESUME_GROWTH_FRACTION = 0.10
#: A tail tool output larger than the tail budget is clipped to this share of it.
TAIL_OUTPUT_SHARE = 0.5


@functools.cache
def _standalone_services() -> tuple[TokenCounter, SummarizerService]:
    """Counter and summarizer for an engine built without a host (scripts, tests)."""
    counter = TokenCounter()
    return counter, SummarizerService(None, counter)


class LegacyEngine(ContextEngine):
    """Protect the head and the recent tail; keep one rolling summary of the middle."""

    name = "legacy"
    version = __version__
    display_name = "Legacy compressor"
    config_model = LegacyConfig

    def __init__(
        self,
        config: LegacyConfig | dict[str, Any] | None = None,
        context: EngineContext | None = None,
    ) -> None:
        settings = (
            config
            if isinstance(config, LegacyConfig)
            else LegacyConfig.model_validate(config or {})
        )
        super().__init__(config=settings, context=context)
        self.settings: LegacyConfig = settings
        self.threshold_percent = settings.threshold_percent
        self._summary_uids: set[str] = set()
        self._ineffective_in_a_row = 0
        self._paused_until_tokens: int | None = None
        self._last_compaction: dict[str, Any] | None = None
        self._last_error: str | None = None

    # Budget bookkeeping.

    def update_from_response(self, usage: dict[str, Any]) -> None:
        apply_usage(self, usage)

    def should_compress(self, prompt_tokens: int | None = None) -> bool:
        tokens = self.last_prompt_tokens if prompt_tokens is None else int(prompt_tokens)
        if not self.threshold_tokens or tokens < self.threshold_tokens:
            return False
        return self._paused_until_tokens is None or tokens >= self._paused_until_tokens

    def get_status(self) -> dict[str, Any]:
        status = super().get_status()
        status.update(
            last_compaction=self._last_compaction,
            last_error=self._last_error,
            ineffective_compactions_in_a_row=self._ineffective_in_a_row,
            paused_until_tokens=self._paused_until_tokens,
        )
        return status

    def on_session_reset(self) -> None:
        super().on_session_reset()
        self._ineffective_in_a_row = 0
        self._paused_until_tokens = None
        self._last_compaction = None
        self._last_error = None

    # Services (the host's, or standalone ones).

    def _count_message(self, message: Message) -> int:
        if self.context is not None:
            return self.context.count_tokens(message)
        return _standalone_services()[0].count_message(message)

    def _summarize(
        self, content: list[Message], target: int, focus: str | None, previous: str | None
    ) -> SummaryResult:
        if self.context is not None:
            return self.context.summarize(content, target, focus_topic=focus, previous=previous)
        return _standalone_services()[1].summarize(content, target, focus, previous)

    # Compaction.

    def compress(
        self,
        messages: list[Message],
        current_tokens: int | None = None,
        focus_topic: str | None = None,
        force: bool = False,
        runtime_settings: Any = None,
        deadline: float | None = None,
    ) -> CompactResult:
        costs = [self._count_message(m) for m in messages]
        before = sum(costs) + REPLY_PRIMER_TOKENS
        threshold = self.threshold_tokens or before
        result = self._prune_only(messages, costs, threshold)
        if result is None:
            result = self._summarize_middle(
                messages, costs, before, threshold, focus_topic, deadline
            )
            if result.ok and (result.tokens_after or 0) >= threshold and force:
                tight = self._summarize_middle(
                    messages, costs, before, threshold, focus_topic, deadline, tight=True
                )
                if tight.ok and tight.compacted:
                    result = tight
        self._record(result, before, threshold)
        return result

    def _tail_budget(self, threshold: int, tight: bool) -> int:
        budget = int(threshold * self.settings.tail_token_fraction)
        return budget // 4 if tight else budget

    def _plan(self, messages: list[Message], costs: list[int], threshold: int, tight: bool) -> Plan:
        return plan_boundaries(
            messages,
            costs,
            protect_first_n=self.settings.protect_first_n,
            tail_budget=self._tail_budget(threshold, tight),
            tail_min_messages=1 if tight else self.settings.tail_min_messages,
        )

    def _prune_only(
        self, messages: list[Message], costs: list[int], threshold: int
    ) -> CompactResult | None:
        """Pruning alone, when it brings the history under the goal; else None."""
        goal = int(threshold * self.settings.prune_only_goal_fraction)
        if goal <= 0:
            return None
        plan = self._plan(messages, costs, threshold, tight=False)
        span = range(plan.head_end, plan.tail_start)
        floor = pruning_floor(
            messages,
            span,
            costs,
            output_tokens=self.settings.prune_tool_output_tokens,
            dedupe_min_tokens=self.settings.dedupe_min_tokens,
            argument_chars=self.settings.max_tool_argument_chars,
        )
        if floor > goal:
            return None  # even the best case misses the goal: skip the work
        pruned, stats = prune(
            messages,
            span,
            costs.__getitem__,
            output_tokens=self.settings.prune_tool_output_tokens,
            dedupe_min_tokens=self.settings.dedupe_min_tokens,
            argument_chars=self.settings.max_tool_argument_chars,
        )
        if not stats.changed:
            return None
        after = self._count_list(pruned)
        if after > goal:
            return None
        return CompactResult(
            ok=True,
            compacted=True,
            reason=(
                f"pruned: {stats.deduplicated} duplicate and {stats.shortened_outputs} long tool "
                f"outputs, {stats.shortened_arguments} long tool-call arguments"
            ),
            tokens_before=sum(costs) + REPLY_PRIMER_TOKENS,
            tokens_after=after,
            messages=pruned,
        )

    def _summarize_middle(
        self,
        messages: list[Message],
        costs: list[int],
        before: int,
        threshold: int,
        focus_topic: str | None,
        deadline: float | None,
        tight: bool = False,
    ) -> CompactResult:
        known = frozenset(self._summary_uids)
        old = [i for i, m in enumerate(messages) if is_summary_message(m, known)]
        previous = "\n".join(summary_body(messages[i]) for i in old) or None
        uid = next(
            (messages[i].get("message_uid") for i in old if messages[i].get("message_uid")), None
        )
        dropped = set(old)
        work = [m for i, m in enumerate(messages) if i not in dropped]
        work_costs = [c for i, c in enumerate(costs) if i not in dropped]
        plan = self._plan(work, work_costs, threshold, tight)
        if plan.tail_start <= plan.head_end:
            if tight:
                return self._clip_only(messages, before, threshold)
            return _unchanged(
                before, "nothing to compact: the protected head and tail cover it all"
            )
        middle, _ = deduplicate_tool_outputs(
            work,
            range(plan.head_end, plan.tail_start),
            self.settings.dedupe_min_tokens,
            work_costs.__getitem__,
        )
        middle = middle[plan.head_end : plan.tail_start]
        try:
            summary = self._summarize(
                middle, self._summary_target(threshold), focus_topic, previous
            )
        except SummarizerError as exc:
            return _unchanged(before, f"summarizer failed: {exc}", ok=False)
        if deadline is not None and time.monotonic() > deadline:
            return _unchanged(before, "deadline passed before the summary was ready", ok=False)
        restated = (
            content_text(work[plan.restate_index]) if plan.restate_index is not None else None
        )
        carrier = build_summary_message(
            summary.text, uid=uid, focus_topic=focus_topic, latest_request=restated
        )
        self._summary_uids.add(carrier["message_uid"])
        tail = work[plan.tail_start :]
        if tight:
            tail = self._clip_tail_outputs(tail, self._tail_budget(threshold, tight=False))
        new = [*work[: plan.head_end], carrier, *tail]
        after = self._count_list(new)
        return CompactResult(
            ok=True,
            compacted=True,
            reason=(
                f"summarized {len(middle)} messages (level {summary.level}, "
                f"{summary.output_tokens} tokens)"
            ),
            tokens_before=before,
            tokens_after=after,
            messages=new,
        )

    def _summary_target(self, threshold: int) -> int:
        target = self.settings.summary_target_tokens or int(
            threshold * self.settings.summary_target_fraction
        )
        return max(MIN_SUMMARY_TOKENS, target)

    def _clip_tail_outputs(self, tail: list[Message], budget: int) -> list[Message]:
        """Clip tool outputs that alone exceed the tail budget (head and end kept)."""
        limit = max(1, int(budget * TAIL_OUTPUT_SHARE))
        clipped = []
        for message in tail:
            tokens = self._count_message(message)
            if message.get("role") == "tool" and tokens > limit:
                text = content_text(message)
                keep = max(1, int(len(text) * limit / tokens))
                head, end = text[: keep * 2 // 3], text[len(text) - keep // 3 :]
                message = {
                    **message,
                    "content": f"{head}\n[… {tokens - limit} tokens clipped …]\n{end}",
                }
            clipped.append(message)
        return clipped

    def _clip_only(self, messages: list[Message], before: int, threshold: int) -> CompactResult:
        """No middle to summarize: clip the oversized tool outputs, if any."""
        clipped = self._clip_tail_outputs(messages, self._tail_budget(threshold, tight=False))
        after = self._count_list(clipped)
        if after >= before:
            return _unchanged(before, "nothing to compact: no middle and no oversized output")
        return CompactResult(
            ok=True,
            compacted=True,
            reason="clipped oversized tool outputs",
            tokens_before=before,
            tokens_after=after,
            messages=clipped,
        )

    def _count_list(self, messages: list[Message]) -> int:
        return sum(self._count_message(m) for m in messages) + REPLY_PRIMER_TOKENS

    def _record(self, result: CompactResult, before: int, threshold: int) -> None:
        """Status, the compaction count, and the no-thrash pause."""
        after = result.tokens_after if result.tokens_after is not None else before
        self._last_compaction = {
            "ok": result.ok,
            "compacted": result.compacted,
            "reason": result.reason,
            "tokens_before": before,
            "tokens_after": after,
        }
        self._last_error = None if result.ok else result.reason
        if result.compacted:
            self.compression_count += 1
            self.last_prompt_tokens = after
        saved_enough = after <= before * (1 - self.settings.min_savings_fraction)
        if result.compacted and saved_enough and after < threshold:
            self._ineffective_in_a_row = 0
            self._paused_until_tokens = None
            return
        self._ineffective_in_a_row += 1
        if self._ineffective_in_a_row >= self.settings.max_ineffective_compactions:
            growth = max(1, int(threshold * RESUME_GROWTH_FRACTION))
            self._paused_until_tokens = max(before, after) + growth


def _unchanged(before: int, reason: str, ok: bool = True) -> CompactResult:
    return CompactResult(
        ok=ok, compacted=False, reason=reason, tokens_before=before, tokens_after=before
    )
