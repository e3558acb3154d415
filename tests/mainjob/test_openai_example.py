"""examples/openai_agent_loop.py against a fake OpenAI-compatible server on 127.0.0.1."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from .conftest import ROOT

pytest.importorskip("openai", reason="the example needs the openai SDK (extra [examples])")


class FakeOpenAI(BaseHTTPRequestHandler):
    """Chat completions: overflow once, then a read_file call, then an answer."""

    requests: list[dict] = []

    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.requests.append(body)
        if self.path != "/v1/chat/completions":
            return self._send(404, {"error": {"message": "not found"}})
        if len(self.requests) == 1:
            return self._send(
                400,
                {
                    "error": {
                        "message": "This model's maximum context length is 8192 tokens.",
                        "type": "invalid_request_error",
                        "code": "context_length_exceeded",
                    }
                },
            )
        last = body["messages"][-1]
        if last["role"] == "tool":
            message = {"role": "assistant", "content": f"The file says: {last['content']}"}
        else:
            message = {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "read_file", "arguments": '{"path": "notes.txt"}'},
                    }
                ],
            }
        self._send(
            200,
            {
                "id": f"cmpl-{len(self.requests)}",
                "object": "chat.completion",
                "created": 0,
                "model": body["model"],
                "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60},
            },
        )

    def _send(self, status: int, payload: dict) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def test_openai_loop_with_tools_and_an_overflow(tmp_path) -> None:
    FakeOpenAI.requests = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeOpenAI)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    (tmp_path / "notes.txt").write_text("hello from notes")
    try:
        result = subprocess.run(
            [sys.executable, str(ROOT / "examples" / "openai_agent_loop.py"), "What is in notes?"],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=tmp_path,
            env={
                **os.environ,
                "OPENAI_BASE_URL": f"http://127.0.0.1:{server.server_port}/v1",
                "OPENAI_API_KEY": "test-key",
                "CTXENGINE_EXAMPLE_MODEL": "gpt-4",
                "CTXENGINE_DATA_DIR": str(tmp_path / "data"),
            },
        )
    finally:
        server.shutdown()
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "The file says: hello from notes"
    assert "[ctxengine] engine=legacy" in result.stderr
    first, retry, final = FakeOpenAI.requests
    assert first["messages"] == retry["messages"]  # rebuilt after the overflow
    assert retry["messages"][0]["role"] == "system"
    assert [t["function"]["name"] for t in retry["tools"]][:2] == ["read_file", "list_dir"]
    assert final["messages"][-1] == {
        "role": "tool",
        "tool_call_id": "call_1",
        "content": "hello from notes",
    }
