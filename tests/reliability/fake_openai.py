"""A local OpenAI-compatible ``/chat/completions`` server on 127.0.0.1 that misbehaves on cue.

Each request takes the next :class:`Reply` of the script (the last one repeats), so a test
can say "429 once, then answer" and count the requests the client made.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Reply:
    status: int = 200
    text: str | None = "- the user asked to read setup.py"
    error: dict | None = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0

    def body(self) -> bytes:
        if self.status != 200:
            return json.dumps({"error": self.error or {"message": "failure"}}).encode()
        return json.dumps(
            {"choices": [{"message": {"role": "assistant", "content": self.text}}]}
        ).encode()


def rate_limited(retry_after: str = "0") -> Reply:
    error = {"message": "Rate limit reached", "type": "requests", "code": "rate_limit_exceeded"}
    return Reply(429, error=error, headers={"Retry-After": retry_after})


def quota_exhausted() -> Reply:
    error = {"message": "You exceeded your quota", "type": "insufficient_quota"}
    return Reply(429, error={**error, "code": "insufficient_quota"})


class FakeOpenAI:
    """Start with ``with FakeOpenAI([...]) as server:``; ``server.base_url`` for the settings."""

    def __init__(self, script: list[Reply]) -> None:
        self.script = list(script)
        self.requests: list[dict] = []
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                payload = json.loads(self.rfile.read(length) or b"{}")
                with outer._lock:
                    outer.requests.append(
                        {"path": self.path, "auth": self.headers.get("Authorization"), **payload}
                    )
                    reply = outer.script.pop(0) if len(outer.script) > 1 else outer.script[0]
                if reply.delay:
                    time.sleep(reply.delay)
                body = reply.body()
                try:
                    self.send_response(reply.status)
                    for key, value in {"Content-Type": "application/json", **reply.headers}.items():
                        self.send_header(key, value)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except OSError:
                    pass  # the client gave up (timeout): nothing to answer

            def log_message(self, *args: object) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.server.block_on_close = False
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> FakeOpenAI:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
