"""A Hermes-style agent loop around an exported engine, for tests and the benchmark.

It drives a :class:`~ctxengine_host.discovery.compat.FrameworkEngineAdapter` the way the
framework's host drives its context engine: the host keeps the history with no
message uids and no system prompt in it, sends ``[system] + history`` to the
model, calls ``compress`` on its own list and replaces the list with the
result, and dispatches engine tools with ``messages=`` the live list. With
``current_abc`` it also calls ``select_context`` before each model call and
``on_turn_complete`` at turn end (the framework's current ABC; the released
package 0.19.0 calls neither). Every tenth turn repeats the same two messages
on purpose, and a planted fact is asked for with ``lcm_grep`` near the end.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..tokens import TokenCounter

SYSTEM_PROMPT = "You are a careful assistant. Answer briefly."
FACT = "the vault code is 7141-quartz"


@dataclass
class LoopReport:
    """What the loop saw: sizes per request and where anything went wrong."""

    messages_sent: int = 0
    requests: int = 0
    largest_request: int = 0
    system_sizes: set[int] = field(default_factory=set)
    newest_missing: list[int] = field(default_factory=list)
    compactions: int = 0
    grep_answer: str = ""
    #: (role, content) of every message the host added, in order.
    sent: list[tuple[str, str]] = field(default_factory=list)


def _user(turn: int) -> dict[str, Any]:
    if turn % 10 == 9:
        return {"role": "user", "content": "ok, go on"}  # the same words, on purpose
    if turn == 3:
        return {"role": "user", "content": f"Remember this: {FACT}."}
    return {"role": "user", "content": f"Question {turn}: what about item {turn * 7 % 101}?"}


def _assistant(turn: int) -> dict[str, Any]:
    if turn % 10 == 9:
        return {"role": "assistant", "content": "Going on."}
    return {"role": "assistant", "content": f"Answer {turn}: item {turn * 7 % 101} is fine."}


def run_hermes_loop(
    adapter: Any,
    *,
    messages: int,
    window: int,
    current_abc: bool,
    counter: TokenCounter | None = None,
    session_id: str = "hermes-loop",
) -> LoopReport:
    """Send ``messages`` uid-less messages through ``adapter`` as the framework's host does."""
    counter = counter or TokenCounter("gpt-4")
    report = LoopReport()
    adapter.update_model("gpt-4", window)
    adapter.on_session_start(session_id)
    system = {"role": "system", "content": SYSTEM_PROMPT}
    history: list[dict[str, Any]] = []
    turn = 0
    grep_at = max(4, messages - 6)
    while report.messages_sent < messages:
        incoming = _user(turn)
        history.append(incoming)
        report.sent.append((incoming["role"], incoming["content"]))
        report.messages_sent += 1
        request = [system, *history]
        if current_abc:
            selected = adapter.select_context(
                request,
                conversation_messages=list(history),
                incoming_message=incoming,
                budget_tokens=window,
            )
            request = selected or request
        report.requests += 1
        report.system_sizes.add(len(request[0]["content"]) if request[0]["role"] == "system" else 0)
        if request[-1].get("content") != incoming["content"]:
            report.newest_missing.append(turn)
        tokens = counter.count_messages(request)
        report.largest_request = max(report.largest_request, tokens)
        adapter.update_from_response(
            {"prompt_tokens": tokens, "completion_tokens": 12, "total_tokens": tokens + 12}
        )
        if report.messages_sent >= grep_at and not report.grep_answer:
            call: dict[str, Any] = {"id": f"call_{turn}", "type": "function"}
            call["function"] = {"name": "lcm_grep", "arguments": '{"pattern": "vault code"}'}
            history.append({"role": "assistant", "content": "", "tool_calls": [call]})
            answer = adapter.handle_tool_call(
                "lcm_grep", {"pattern": "vault code"}, messages=history
            )
            report.grep_answer = answer
            history.append({"role": "tool", "tool_call_id": call["id"], "content": answer})
            report.sent += [("assistant", ""), ("tool", answer)]
            report.messages_sent += 2
        reply = _assistant(turn)
        history.append(reply)
        report.sent.append((reply["role"], reply["content"]))
        report.messages_sent += 1
        if current_abc:
            adapter.on_turn_complete(list(history), usage=None)
        if adapter.should_compress(tokens):
            history = adapter.compress(history, current_tokens=tokens)
            report.compactions += 1
        turn += 1
    adapter.on_session_end(session_id, history)
    return report
