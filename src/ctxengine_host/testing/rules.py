"""The contract rules an engine is responsible for, and how a broken one is reported.

Every failure the kit raises starts with ``[contract: <rule>]`` so an author can
look the rule up (docs/authoring.md lists them with the same ids).
"""

from __future__ import annotations

from collections.abc import Iterable

#: Rule id -> what the engine must do.
RULES: dict[str, str] = {
    "name": "`name` is a non-empty string without whitespace and not a reserved slot alias "
    "(none, compressor)",
    "info-attributes": "version, display_name, owns_compaction, turn_maintenance_mode, "
    "config_model and the budget attributes have the contract's types",
    "required-methods": "update_from_response, should_compress and compress are implemented",
    "parameter-names": "every parameter of every implemented contract method is a parameter "
    "of its hookspec (same names; defaulted and keyword-only ones included)",
    "update-from-response": "update_from_response(usage) records last_prompt_tokens, "
    "last_completion_tokens and last_total_tokens",
    "should-compress": "should_compress(prompt_tokens) returns a bool",
    "get-status": "get_status() returns the standard keys: last_prompt_tokens >= 0, "
    "threshold_tokens, context_length, usage_percent in 0..100, compression_count",
    "session-reset": "on_session_reset() zeroes the three token counters and compression_count",
    "unknown-tool-error": "handle_tool_call() on an unknown tool returns a JSON object "
    'with an "error" key',
    "tool-schemas": "get_tool_schemas() returns valid OpenAI function-tool schemas "
    "(parameters a JSON Schema object)",
    "compress-valid-sequence": "compress() returns a valid message sequence (known roles, "
    "tool calls and results paired) or a CompactResult holding one",
    "compress-long-tool-loop": "replayed through a long single-task tool loop (one user "
    "message, then a hundred tool calls), every compaction is a valid request that keeps a "
    "user message",
    "compress-shrinks": "under pressure, compress() returns no more tokens than it was given",
    "select-context-valid": "select_context() returns None, a list of message dicts forming "
    "a valid sequence, or an AssembleResult, and leaves its input unchanged",
    "select-context-budget": "a list select_context() returns fits in budget_tokens",
    "select-context-stable": "select_context() returns an equal selection when nothing changed",
    "select-context-head": "the request's system prompt is not counted against "
    "budget_tokens (the host has taken it off already): a long one leaves the selected "
    "conversation as it is",
    "select-context-covers": "the covers an AssembleResult declares name live messages: each "
    "a message_uid of conversation_messages or a (first, last) pair of them in live order, "
    "none of them a message the result also sends",
    "clone-independence": "clone_for_agent() returns a new engine whose update_model and "
    "update_from_response never change the original",
    "concurrent-sessions": "one engine serves several sessions on several threads at once "
    "without errors or one session's messages appearing in another's requests",
    "model-thresholds": "update_model() applies model_thresholds (longest substring key, "
    "provider:key for its provider) and returns to the configured threshold otherwise",
    "entry-point-discovery": "an installed engine is found through its `ctxengine.engines` "
    "entry point by name, and that entry point builds an engine of that name",
    "host-requirements": "host_requirements maps operation names to a non-empty list of "
    "known host capabilities and a message",
    "lifecycle-results": "the optional lifecycle methods accept the contract's arguments and "
    "return what the contract allows",
}


#: Problems listed in one failure message; the rest are counted.
MAX_LISTED = 3


class ContractViolation(AssertionError):
    """An engine broke a contract rule; the message names the rule."""

    def __init__(self, rule: str, detail: str) -> None:
        if rule not in RULES:
            raise ValueError(f"unknown contract rule {rule!r}")
        self.rule = rule
        self.detail = detail
        super().__init__(f"[contract: {rule}] {detail}\n  rule: {RULES[rule]}")


def violation(rule: str, detail: str) -> ContractViolation:
    """The exception to raise when ``rule`` is broken."""
    return ContractViolation(rule, detail)


def require(rule: str, problems: Iterable[str], context: str = "") -> None:
    """Raise a violation of ``rule`` listing ``problems`` when there are any."""
    found = list(problems)
    if found:
        prefix = f"{context}: " if context else ""
        more = f" (and {len(found) - MAX_LISTED} more)" if len(found) > MAX_LISTED else ""
        raise ContractViolation(rule, prefix + "; ".join(found[:MAX_LISTED]) + more)
