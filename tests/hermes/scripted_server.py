"""A scripted OpenAI-compatible chat server on 127.0.0.1 for driving a real agent loop.

Each ``/chat/completions`` request is answered by the script: a plain reply, or
a call to ``lcm_grep`` when the last user message asks to search. Usage is
the request's real size (cl100k, by our token counter), so the agent's engine sees the
prompt grow exactly as it would with a provider; every request is recorded.
"""

from __future__ import annotations

import json
from typing import Any

from ctxengine_host.tokens import TokenCounter
from tests.support.chat_server import ChatServer, usage

SEARCH_WORD = "SEARCH-HISTORY"
_counter = TokenCounter("gpt-4")


def request_tokens(payload: dict[str, Any]) -> int:
    """Tokens of the messages and tool schemas sent (the provider's prompt_tokens)."""
    messages = [m for m in payload.get("messages", []) if isinstance(m, dict)]
    return _counter.count_messages(messages) + _counter.count_tools(payload.get("tools") or [])


def _last(messages: list[dict[str, Any]], role: str) -> dict[str, Any] | None:
    return next((m for m in reversed(messages) if m.get("role") == role), None)


def scripted_reply(payload: dict[str, Any], number: int) -> dict[str, Any]:
    """The assistant message for one request."""
    messages = payload.get("messages", [])
    last = messages[-1] if messages else {}
    user = _last(messages, "user") or {}
    tool_names = {t.get("function", {}).get("name") for t in payload.get("tools", [])}
    if (
        last.get("role") == "user"
        and SEARCH_WORD in str(user.get("content"))
        and "lcm_grep" in tool_names
    ):
        call = {
            "id": f"call_{number}",
            "type": "function",
            "function": {"name": "lcm_grep", "arguments": json.dumps({"pattern": "vault code"})},
        }
        return {"role": "assistant", "content": None, "tool_calls": [call]}
    if last.get("role") == "tool":
        return {"role": "assistant", "content": f"Found it: {str(last.get('content'))[:300]}"}
    return {"role": "assistant", "content": f"Noted ({number})."}


class ScriptedServer(ChatServer):
    """``with ScriptedServer() as server``: ``server.base_url``, ``server.requests``."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        super().__init__(self._answer)

    def _answer(self, payload: dict[str, Any], number: int) -> tuple[dict[str, Any], dict]:
        tokens = request_tokens(payload)
        self.requests.append({"tokens": tokens, **payload})
        return scripted_reply(payload, number), usage(tokens, 8)
