"""A well-behaved engine, and one deliberately broken engine per contract rule.

The kit runs on each of them in a real pytest subprocess (test_broken_engines.py);
each broken engine must make the kit fail with a message naming its rule.
Mapping: ``BROKEN[rule]`` is the class breaking ``rule``.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from ctxengine_host.contract.engine import ContextEngine
from ctxengine_host.contract.messages import atomic_blocks, flatten, leading_system
from ctxengine_host.contract.models import AssembleResult
from ctxengine_host.discovery.fallback import SlidingWindowEngine, keep_newest_that_fit

Message = dict[str, Any]

ECHO_TOOL = {
    "name": "kit_echo",
    "description": "Echo a text back.",
    "parameters": {
        "type": "object",
        "properties": {"text": {"type": "string", "description": "What to echo"}},
        "required": ["text"],
    },
}


class GoodEngine(SlidingWindowEngine):
    """Sliding window plus a budgeted selection and one tool: passes every rule."""

    name = "kit-good"
    version = "1.0.0"
    display_name = "Kit good engine"

    def select_context(
        self,
        request_messages: list[Message],
        *,
        conversation_messages: list[Message] | None = None,
        incoming_message: Message | None = None,
        budget_tokens: int = 0,
    ) -> list[Message] | None:
        head = leading_system(request_messages)
        if not budget_tokens or self._count(request_messages[len(head) :]) <= budget_tokens:
            return None
        return self._fit(request_messages, budget_tokens)

    def _fit(self, request_messages: list[Message], budget_tokens: int) -> list[Message]:
        """The system head, then the conversation's newest messages within the budget
        (the conversation's: the host has taken the system prompt off it already)."""
        head = leading_system(request_messages)
        return head + keep_newest_that_fit(
            request_messages[len(head) :], budget_tokens, self._count
        )

    def get_tool_schemas(self) -> list[dict[str, Any]]:
        return [ECHO_TOOL]

    def handle_tool_call(self, name: str, args: dict[str, Any], **kwargs: Any) -> str:
        if name == "kit_echo":
            return json.dumps({"text": args.get("text", "")})
        return json.dumps({"error": f"Unknown tool: {name}"})


class ReservedName(GoodEngine):
    name = "none"


class BadInfo(GoodEngine):
    turn_maintenance_mode = "sometimes"


class NoShouldCompress:
    """Not a ContextEngine subclass, and lacking ``should_compress``."""

    name = "kit-duck"
    version = "1.0.0"
    last_prompt_tokens = last_completion_tokens = last_total_tokens = 0
    threshold_tokens = context_length = compression_count = 0
    threshold_percent = 0.75
    model_thresholds: dict[str, float] = {}

    def update_from_response(self, usage: dict[str, Any]) -> None:
        self.last_prompt_tokens = usage.get("prompt_tokens", 0)

    def compress(self, messages: list[Message], current_tokens: int | None = None) -> list:
        return messages


class MisspelledParameter(GoodEngine):
    def compress(self, messages, current_tokens=None, focus=None):  # the spec says focus_topic
        return super().compress(messages, current_tokens)


class ForgetsTotals(GoodEngine):
    def update_from_response(self, usage: dict[str, Any]) -> None:
        self.last_prompt_tokens = int(usage.get("prompt_tokens") or 0)
        self.last_completion_tokens = int(usage.get("completion_tokens") or 0)


class ShouldCompressReturnsTokens(GoodEngine):
    def should_compress(self, prompt_tokens: int | None = None) -> Any:
        return prompt_tokens or 0


class UnclampedStatus(GoodEngine):
    def get_status(self) -> dict[str, Any]:
        status = super().get_status()
        status["usage_percent"] = 100.0 * self.last_prompt_tokens / max(1, self.context_length)
        return status


class PartialReset(GoodEngine):
    def on_session_reset(self) -> None:
        self.last_prompt_tokens = 0


class PlainTextToolError(GoodEngine):
    def handle_tool_call(self, name: str, args: dict[str, Any], **kwargs: Any) -> str:
        return f"no such tool: {name}"


class BadToolSchema(GoodEngine):
    def get_tool_schemas(self) -> list[dict[str, Any]]:
        broken = copy.deepcopy(ECHO_TOOL)
        broken["parameters"]["properties"]["text"]["type"] = "str"
        return [broken]


class DropsToolResults(GoodEngine):
    def compress(self, messages, current_tokens=None, focus_topic=None):
        self.compression_count += 1
        return [m for m in messages if m.get("role") != "tool"]


class TrimsToTheNewestUser(GoodEngine):
    """The old new-engine template's trim: the newest whole blocks, then leading messages
    dropped one by one until a user message. Fine on short turns; in one long tool loop
    it leaves a lone tool result (or nothing but one message)."""

    def compress(self, messages, current_tokens=None, focus_topic=None):
        head = [m for m in messages[:1] if m.get("role") == "system"]
        budget = (self.threshold_tokens or 2048) // 2
        kept: list[list[Message]] = []
        used = self._count(head)
        for block in reversed(atomic_blocks(messages[len(head) :])):
            if kept and used + self._count(block) > budget:
                break
            kept.insert(0, block)
            used += self._count(block)
        tail = flatten(kept)
        while len(tail) > 1 and tail[0].get("role") != "user":
            tail = tail[1:]
        self.compression_count += 1
        return head + tail


class GrowsOnCompress(GoodEngine):
    def compress(self, messages, current_tokens=None, focus_topic=None):
        notes = {"role": "system", "content": "Summary so far. " * 400}
        return [messages[0], notes, *messages[1:]] if messages else [notes]


class SelectsStrings(GoodEngine):
    def select_context(self, request_messages, *, budget_tokens=0, **_: Any):
        return [str(m.get("content")) for m in request_messages]


class IgnoresBudget(GoodEngine):
    def select_context(self, request_messages, *, budget_tokens=0):
        return list(request_messages)


class CountsTheSystemPrompt(GoodEngine):
    """Fits the system prompt into a budget the host has taken it off already."""

    def select_context(self, request_messages, *, budget_tokens=0):
        if not budget_tokens or self._count(request_messages) <= budget_tokens:
            return None
        return keep_newest_that_fit(request_messages, budget_tokens, self._count)


class UnstableSelection(GoodEngine):
    calls = 0

    def select_context(self, request_messages, *, budget_tokens=0):
        type(self).calls += 1
        budget = budget_tokens // (1 + type(self).calls % 2)
        return keep_newest_that_fit(request_messages, budget, self._count)


class CoversUnknownMessages(GoodEngine):
    """Declares a cover for messages the conversation does not hold."""

    def select_context(self, request_messages, *, budget_tokens=0, **_: Any):
        kept = self._fit(request_messages, budget_tokens)
        return AssembleResult(messages=kept, covers=[("no-such-uid", "nor-this-one")])


class SharedThresholdsClone(GoodEngine):
    def clone_for_agent(self) -> ContextEngine:
        return copy.copy(self)  # shares model_thresholds with the original


class SharedHistory(GoodEngine):
    """Keeps every session's messages in one class-wide list and selects from it."""

    history: list[Message] = []

    def ingest(self, session_id: str, messages: list[Message]) -> None:
        type(self).history.extend(messages)

    def select_context(self, request_messages, *, budget_tokens=0):
        pool = type(self).history or request_messages
        return keep_newest_that_fit(list(pool), budget_tokens or 10**9, self._count)


class IgnoresModelThresholds(GoodEngine):
    def update_model(self, model, context_length, base_url="", api_key="", provider=""):
        self.context_length = context_length
        self.threshold_tokens = int(context_length * self.threshold_percent)


class MisnamedEntryPoint(GoodEngine):
    """Installed (in the test) under entry point ``kit-misnamed`` but named differently."""

    name = "kit-other-name"


class UnknownCapability(GoodEngine):
    host_requirements = {
        "agent-run": {"capabilities": ["teleport"], "message": "needs a teleporting host"}
    }


class IngestReturnsText(GoodEngine):
    def ingest(self, session_id: str, messages: list[Message]) -> Any:
        return "ok"


#: The rule each broken engine breaks.
BROKEN: dict[str, type] = {
    "name": ReservedName,
    "info-attributes": BadInfo,
    "required-methods": NoShouldCompress,
    "parameter-names": MisspelledParameter,
    "update-from-response": ForgetsTotals,
    "should-compress": ShouldCompressReturnsTokens,
    "get-status": UnclampedStatus,
    "session-reset": PartialReset,
    "unknown-tool-error": PlainTextToolError,
    "tool-schemas": BadToolSchema,
    "compress-valid-sequence": DropsToolResults,
    "compress-long-tool-loop": TrimsToTheNewestUser,
    "compress-shrinks": GrowsOnCompress,
    "select-context-valid": SelectsStrings,
    "select-context-budget": IgnoresBudget,
    "select-context-head": CountsTheSystemPrompt,
    "select-context-stable": UnstableSelection,
    "select-context-covers": CoversUnknownMessages,
    "clone-independence": SharedThresholdsClone,
    "concurrent-sessions": SharedHistory,
    "model-thresholds": IgnoresModelThresholds,
    "entry-point-discovery": MisnamedEntryPoint,
    "host-requirements": UnknownCapability,
    "lifecycle-results": IngestReturnsText,
}

#: Entry points the test installs (as a ``.dist-info`` on the subprocess's path).
ENTRY_POINTS = {"kit-misnamed": "broken_engines:MisnamedEntryPoint"}
