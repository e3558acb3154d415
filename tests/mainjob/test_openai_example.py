"""examples/openai_agent_loop.py against a fake OpenAI-compatible server on 127.0.0.1."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.support.chat_server import ChatServer, ProviderError, usage

from .conftest import ROOT

pytest.importorskip("openai", reason="the example needs the openai SDK (extra [examples])")


OVERFLOW = {
    "message": "This model's maximum context length is 8192 tokens.",
    "type": "invalid_request_error",
    "code": "context_length_exceeded",
}


class Script:
    """Chat completions: overflow once, then a read_file call, then an answer."""

    def __init__(self) -> None:
        self.requests: list[dict] = []

    def __call__(self, body: dict, number: int) -> tuple[dict, dict[str, int]]:
        self.requests.append(body)
        if number == 1:
            raise ProviderError(400, OVERFLOW)
        last = body["messages"][-1]
        if last["role"] == "tool":
            return {"content": f"The file says: {last['content']}"}, usage(50, 10)
        call = {"id": "call_1", "type": "function"}
        call["function"] = {"name": "read_file", "arguments": '{"path": "notes.txt"}'}
        return {"tool_calls": [call]}, usage(50, 10)


def test_openai_loop_with_tools_and_an_overflow(tmp_path) -> None:
    script = Script()
    (tmp_path / "notes.txt").write_text("hello from notes")
    with ChatServer(script) as server:
        result = subprocess.run(
            [sys.executable, str(ROOT / "examples" / "openai_agent_loop.py"), "What is in notes?"],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=tmp_path,
            env={
                **os.environ,
                "OPENAI_BASE_URL": server.base_url,
                "OPENAI_API_KEY": "test-key",
                "CTXENGINE_EXAMPLE_MODEL": "gpt-4",
                "CTXENGINE_DATA_DIR": str(tmp_path / "data"),
            },
        )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "The file says: hello from notes"
    assert "[ctxengine] engine=legacy" in result.stderr
    first, retry, final = script.requests
    assert first["messages"] == retry["messages"]  # rebuilt after the overflow
    assert retry["messages"][0]["role"] == "system"
    assert [t["function"]["name"] for t in retry["tools"]][:2] == ["read_file", "list_dir"]
    assert final["messages"][-1] == {
        "role": "tool",
        "tool_call_id": "call_1",
        "content": "hello from notes",
    }
