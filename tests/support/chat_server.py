"""An OpenAI-compatible Chat Completions server on 127.0.0.1, for driving real agent loops.

The tests' scripted models differ only in what they answer; the HTTP side (the routes,
the completion envelope, its streamed form as server-sent events) lives here once.
Standard library only: the framework environments' scenarios and the gateway's scripted
model run it under other interpreters (``tests/support`` on their ``PYTHONPATH``).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

#: ``answer(request_body, number)`` -> (assistant message, usage); ``number`` counts from 1.
Answer = Callable[[dict[str, Any], int], tuple[dict[str, Any], dict[str, int]]]


class ProviderError(Exception):
    """Raised by an answer: the request is answered with ``status`` and ``{"error": error}``,
    as a provider refuses one (a context overflow, a rate limit)."""

    def __init__(self, status: int, error: dict[str, Any]) -> None:
        super().__init__(error.get("message", status))
        self.status = status
        self.error = error


def usage(prompt_tokens: int, completion_tokens: int) -> dict[str, int]:
    """The ``usage`` object of a completion."""
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }


def completion(
    number: int, model: str, message: dict[str, Any], tokens: dict[str, int]
) -> dict[str, Any]:
    """A ``chat.completion`` answering with ``message`` (its finish reason follows from it)."""
    message = {"role": "assistant", "content": None, **message}
    finish = "tool_calls" if message.get("tool_calls") else "stop"
    return {
        "id": f"chatcmpl-{number}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": tokens,
    }


def completion_chunks(body: dict[str, Any]) -> list[dict[str, Any]]:
    """``body`` streamed as a provider streams it: the delta, the finish, then the usage."""
    choice = body["choices"][0]
    message = choice["message"]
    delta: dict[str, Any] = {"role": "assistant", "content": message.get("content")}
    if message.get("tool_calls"):
        delta["tool_calls"] = [{**c, "index": i} for i, c in enumerate(message["tool_calls"])]
    base = {k: body[k] for k in ("id", "created", "model")} | {"object": "chat.completion.chunk"}
    return [
        {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
        {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]}]},
        {**base, "choices": [], "usage": body["usage"]},
    ]


class ChatServer:
    """Serves ``answer`` on 127.0.0.1: ``with ChatServer(answer) as s`` runs it in a thread
    (``s.base_url``); :meth:`serve_forever` runs it in the calling thread."""

    def __init__(self, answer: Answer, port: int = 0) -> None:
        self.answer = answer
        self._count = 0
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", port), self._handler())
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def serve_forever(self) -> None:
        self._httpd.serve_forever()

    def __enter__(self) -> ChatServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def _next_number(self) -> int:
        with self._lock:
            self._count += 1
            return self._count

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # /models: what a client may probe
                self._json(200, {"object": "list", "data": [{"id": "scripted", "object": "model"}]})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                payload = json.loads(self.rfile.read(length) or b"{}")
                if not self.path.endswith("/chat/completions"):
                    self._json(404, {"error": {"message": f"no route {self.path}"}})
                    return
                number = server._next_number()
                try:
                    message, tokens = server.answer(payload, number)
                except ProviderError as refusal:
                    self._json(refusal.status, {"error": refusal.error})
                    return
                except Exception as exc:  # the script itself is broken: say so
                    self._json(500, {"error": {"message": repr(exc)}})
                    return
                body = completion(number, payload.get("model", "scripted"), message, tokens)
                if payload.get("stream"):
                    self._stream(completion_chunks(body))
                else:
                    self._json(200, body)

            def _stream(self, chunks: list[dict[str, Any]]) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.end_headers()
                for chunk in chunks:
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()

            def _json(self, status: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        return Handler
