"""A scripted OpenAI-compatible chat server on 127.0.0.1 for driving a real agent loop.

Each ``/chat/completions`` request is answered by the script: a plain reply, or
a call to ``lcm_grep`` when the last user message asks to search. Usage is
the request's real size (cl100k, by our token counter), so the agent's engine sees the
prompt grow exactly as it would with a provider; every request is recorded.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from ctxengine_host.tokens import TokenCounter

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


class ScriptedServer:
    """``with ScriptedServer() as server``: ``server.base_url``, ``server.requests``."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # /models: what a client may probe
                self._send(200, {"object": "list", "data": [{"id": "scripted", "object": "model"}]})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                payload = json.loads(self.rfile.read(length) or b"{}")
                tokens = request_tokens(payload)
                with outer._lock:
                    number = len(outer.requests)
                    outer.requests.append({"path": self.path, "tokens": tokens, **payload})
                message = scripted_reply(payload, number)
                usage = {
                    "prompt_tokens": tokens,
                    "completion_tokens": 8,
                    "total_tokens": tokens + 8,
                }
                finish = "tool_calls" if message.get("tool_calls") else "stop"
                body = {
                    "id": f"chatcmpl-{number}",
                    "object": "chat.completion",
                    "created": 0,
                    "model": payload.get("model", "scripted"),
                    "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                    "usage": usage,
                }
                if payload.get("stream"):
                    self._stream(body)
                else:
                    self._send(200, body)

            def _stream(self, body: dict[str, Any]) -> None:
                choice = body["choices"][0]
                delta = dict(choice["message"])
                if delta.get("tool_calls"):
                    delta["tool_calls"] = [
                        {**c, "index": i} for i, c in enumerate(delta["tool_calls"])
                    ]
                chunks = [
                    {
                        **body,
                        "object": "chat.completion.chunk",
                        "usage": None,
                        "choices": [{"index": 0, "delta": delta, "finish_reason": None}],
                    },
                    {
                        **body,
                        "object": "chat.completion.chunk",
                        "choices": [
                            {"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]}
                        ],
                    },
                ]
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                for chunk in chunks:
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.write(b"data: [DONE]\n\n")

            def _send(self, status: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> ScriptedServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._server.shutdown()
        self._server.server_close()
