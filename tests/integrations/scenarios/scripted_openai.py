"""A scripted OpenAI-compatible Chat Completions server on 127.0.0.1, for framework tests.

``ScriptedOpenAI(respond)`` answers each ``POST .../chat/completions`` with the
assistant message ``respond(body)`` returns, and keeps every request body it got
(the HTTP side is ``tests/support/chat_server.py``, on the scenarios' ``PYTHONPATH``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from chat_server import ChatServer, usage

Message = dict[str, Any]


class ScriptedOpenAI(ChatServer):
    """``with ScriptedOpenAI(respond) as server``: ``server.base_url``, ``server.requests``."""

    def __init__(self, respond: Callable[[dict[str, Any]], Message]) -> None:
        self.respond = respond
        self.requests: list[dict[str, Any]] = []
        super().__init__(self._answer)

    def _answer(self, body: dict[str, Any], number: int) -> tuple[Message, dict[str, int]]:
        self.requests.append(body)
        prompt = sum(len(json.dumps(m)) for m in body.get("messages", [])) // 4
        return self.respond(body), usage(prompt, 10)


def tool_call(call_id: str, name: str, args: dict[str, Any]) -> Message:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(args)},
    }


def normalize(messages: list[Message]) -> list[tuple]:
    """Compare what a provider got with what the engine assembled, modulo JSON spelling."""
    out = []
    for m in messages:
        calls = tuple(
            (
                c["id"],
                c["function"]["name"],
                json.dumps(json.loads(c["function"]["arguments"] or "{}"), sort_keys=True),
            )
            for c in m.get("tool_calls") or []
        )
        content = m.get("content")
        if isinstance(content, list):
            content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
        out.append((m["role"], content or "", calls, m.get("tool_call_id")))
    return out


class Script:
    """The scripted model: read a log per question, once call the engine's first tool, answer."""

    def __init__(
        self, engine_tool: str | None, engine_tool_after: int = 6, reads_per_question: int = 1
    ) -> None:
        self.engine_tool = engine_tool
        self.reads_per_question = reads_per_question
        self.reads = 0
        self.engine_tool_after = engine_tool_after
        self.calls = 0
        self.logs: list[int] = []
        self.engine_called = False

    def __call__(self, body: dict[str, Any]) -> Message:
        self.calls += 1
        last = body["messages"][-1]
        offered = {t["function"]["name"] for t in body.get("tools") or []}
        if last["role"] == "user":
            self.reads = 0
        if last["role"] == "user" or (
            last["role"] == "tool" and self.reads < self.reads_per_question
        ):
            self.reads += 1
            self.logs.append(self.calls)
            call = tool_call(f"call_{self.calls}", "read_log", {"turn": self.calls})
            return {"content": f"reading log {self.calls}", "tool_calls": [call]}
        if (
            self.engine_tool
            and not self.engine_called
            and self.calls > self.engine_tool_after
            and self.engine_tool in offered
        ):
            self.engine_called = True
            call = tool_call("engine_1", self.engine_tool, {"pattern": "flaky", "limit": 2})
            return {"tool_calls": [call]}
        return {"content": f"answer {self.calls}"}
