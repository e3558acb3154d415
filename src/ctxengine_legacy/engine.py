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
import math
import time
from typing import Any

from ctxengine_host.contract.context import EngineContext
from ctxengine_host.contract.engine import ContextEngine
from ctxengine_host.contract.messages import content_text
from ctxengine_host.contract.models import CompactResult, SummaryResult
from ctxengine_host.contract.tasktext import shorten_task, summarize_with, task_limit
from ctxengine_host.contract.usage import apply_usage
from ctxengine_host.summarizer import SummarizerError, SummarizerService
from ctxengine_host.tokens import REPLY_PRIMER_TOKENS, TokenCounter, message_digest

from ._version import __version__
from .boundaries import Plan, plan_boundaries
from .config import LegacyConfig
from .pruning import (
    deduplicate_tool_outputs,
    describe_tool_output,
    prune,
    pruning_floor,
    tool_calls_by_id,
)
from .summary_message import build_summary_message, is_summary_message, summary_body

Message = dict[str, Any]

#: The smallest summary budget worth asking for.
MIN_SUMMARY_TOKENS = 64
#: A protected head's tool output over this share of the threshold is described instead.
HEAD_OUTPUT_SHARE = 0.25
#: Opens the line that stands for messages folded into the summary without summarizing.
FOLD_NOTE_PREFIX = "[Folded in:"
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
        #: ``threshold_percent`` of the conversation budget the host reported (0: not yet).
        self._budget_threshold = 0
        #: The session's own messages seen by ``compress`` (by uid) and their tokens, and the
        #: summary tokens written so far: the summary budget is a share of the former.
        self._seen_uids: set[str] = set()
        self._session_tokens = 0
        self._summary_tokens_written = 0
        self._folded: dict[str, int] = {}

    # Budget bookkeeping.

    @property
    def min_budget_tokens(self) -> int:  # type: ignore[override]
        """Below this budget the rolling summary's share drops under ``MIN_SUMMARY_TOKENS``."""
        s = self.settings
        share = s.threshold_percent * s.summary_target_fraction
        return math.ceil(MIN_SUMMARY_TOKENS / share)

    def _threshold(self) -> int:
        """The window's threshold, lowered to the share of the conversation budget.

        With a large output reserve the window's threshold can lie above the budget, and
        then it never fires: every compaction would be an overflow that frees just enough
        for one more call (the thrash of issue #14).
        """
        candidates = [t for t in (self.threshold_tokens, self._budget_threshold) if t > 0]
        return min(candidates) if candidates else 0

    def _learn_budget(self, runtime_settings: Any) -> None:
        limits = getattr(runtime_settings, "limits", None)
        budget = getattr(limits, "budget_tokens", None)
        if isinstance(budget, int) and budget > 0:
            self._budget_threshold = int(budget * self.threshold_percent)

    def update_from_response(self, usage: dict[str, Any]) -> None:
        apply_usage(self, usage)

    def should_compress(self, prompt_tokens: int | None = None) -> bool:
        tokens = self.last_prompt_tokens if prompt_tokens is None else int(prompt_tokens)
        threshold = self._threshold()
        if not threshold or tokens < threshold:
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
        self._seen_uids = set()
        self._session_tokens = 0
        self._summary_tokens_written = 0
        self._folded = {}
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
        self._learn_budget(runtime_settings)
        costs = [self._count_message(m) for m in messages]
        self._note_session_tokens(messages, costs)
        before = sum(costs) + REPLY_PRIMER_TOKENS
        threshold = self._threshold() or before
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
        result = self._with_task_shortened(result, messages, before, threshold)
        self._record(result, before, threshold)
        return result

    def _with_task_shortened(
        self, result: CompactResult, messages: list[Message], before: int, threshold: int
    ) -> CompactResult:
        """``result`` with the newest user message shortened when it is over its share.

        The task is kept in every request; one larger than a quarter of the budget keeps
        its head and tail verbatim and a marked summary of its middle.
        """
        out = result.messages if result.messages is not None else messages
        index = next((i for i in range(len(out) - 1, -1, -1) if out[i].get("role") == "user"), None)
        if index is None or is_summary_message(out[index], frozenset(self._summary_uids)):
            return result
        limit = task_limit(int(threshold / self.threshold_percent))
        if self._count_message(out[index]) <= limit:
            return result
        if self.context is not None:
            summarize = summarize_with(self.context.summarize)
        else:
            summarize = summarize_with(_standalone_services()[1].summarize)
        count = functools.partial(_count_text, self._count_message)
        shortened = shorten_task(out[index], limit, count, summarize)
        new = [*out[:index], shortened, *out[index + 1 :]]
        after = self._count_list(new)
        reason = (
            f"{result.reason}; the task message shortened"
            if result.compacted
            else ("the task message shortened (over a quarter of the budget)")
        )
        return CompactResult(
            ok=True,
            compacted=True,
            reason=reason,
            tokens_before=before,
            tokens_after=after,
            messages=new,
        )

    def _note_session_tokens(self, messages: list[Message], costs: list[int]) -> None:
        """Add the tokens of messages not seen before (our own summaries aside)."""
        for message, cost in zip(messages, costs, strict=True):
            uid = message.get("message_uid")
            if uid in self._summary_uids or is_summary_message(message):
                continue
            key = uid if isinstance(uid, str) else message_digest(message)  # a caller's copy
            if key not in self._seen_uids:
                self._seen_uids.add(key)
                self._session_tokens += cost

    def _summary_allowance(self) -> int:
        """Summary tokens this session may still write (``max_summary_token_ratio``)."""
        limit = int(self._session_tokens * self.settings.max_summary_token_ratio)
        return max(0, limit - self._summary_tokens_written)

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
        target = self._summary_target(threshold)
        if previous is not None and self._summary_allowance() < target:
            text, note = _folded_without_summary(previous, middle, self._folded)
            written = self._count_message({"role": "user", "content": note})
            summary = SummaryResult(text=text, level=2, output_tokens=written, backend="fold")
        else:
            try:
                summary = self._summarize(middle, target, focus_topic, previous)
            except SummarizerError as exc:
                return _unchanged(before, f"summarizer failed: {exc}", ok=False)
        self._summary_tokens_written += summary.output_tokens
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
        new = [
            *self._shrink_head_outputs(
                work[: plan.head_end], work_costs[: plan.head_end], threshold
            ),
            carrier,
            *tail,
        ]
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

    def _shrink_head_outputs(
        self, head: list[Message], costs: list[int], threshold: int
    ) -> list[Message]:
        """The protected head with each tool output over a quarter of the threshold described.

        In a single long agent loop the head holds the task and the first tool call; a
        large output of that call would otherwise stay in every request of the session.
        """
        limit = max(self.settings.prune_tool_output_tokens, int(threshold * HEAD_OUTPUT_SHARE))
        if not any(m.get("role") == "tool" and c > limit for m, c in zip(head, costs, strict=True)):
            return head
        calls = tool_calls_by_id(head)
        return [
            {**m, "content": describe_tool_output(m, calls, c)}
            if m.get("role") == "tool" and c > limit
            else m
            for m, c in zip(head, costs, strict=True)
        ]

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


def _count_text(count_message: Any, text: str) -> int:
    return int(count_message({"role": "user", "content": text}))


def _folded_without_summary(
    previous: str, middle: list[Message], folded: dict[str, int]
) -> tuple[str, str]:
    """The previous summary kept, with one line naming what was folded in unsummarized.

    Used once the session's summary budget is spent: re-summarizing on every compaction
    would write more summary text than the session itself holds. ``folded`` counts the
    messages and tool calls folded so far (updated here); the line replaces the last one.
    """
    folded["messages"] = folded.get("messages", 0) + len(middle)
    for message in middle:
        for call in message.get("tool_calls") or ():
            name = str((call.get("function") or {}).get("name", "tool"))
            folded[name] = folded.get(name, 0) + 1
    calls = ", ".join(f"{k} x{n}" for k, n in sorted(folded.items()) if k != "messages")
    note = (
        f"{FOLD_NOTE_PREFIX} {folded['messages']} later messages ({calls or 'no tool calls'}) "
        "were folded in without a new summary: this session's summary budget is spent]"
    )
    kept = [line for line in previous.splitlines() if not line.startswith(FOLD_NOTE_PREFIX)]
    return "\n".join([*kept, note]), note


def _unchanged(before: int, reason: str, ok: bool = True) -> CompactResult:
    return CompactResult(
        ok=ok, compacted=False, reason=reason, tokens_before=before, tokens_after=before
    )
