"""A minimal JSON-RPC client for ``ctxengine serve`` over stdio (the plugin's job, in Python)."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

CTXENGINE = Path(sys.executable).with_name("ctxengine")
#: How long a test waits for one answer: an unanswered call fails instead of hanging.
ANSWER_TIMEOUT_S = 120


def strict_json(line: bytes) -> Any:
    """``line`` read as the gateway reads it (Node's ``JSON.parse``: no NaN, no Infinity)."""

    def refuse(name: str) -> Any:
        raise AssertionError(f"the server wrote {name}, which no JSON reader takes: {line[:200]!r}")

    return json.loads(line, parse_constant=refuse)


class StdioClient:
    """Starts ``ctxengine serve`` and talks to it line by line; answers server calls."""

    def __init__(self, tmp_path: Path, engine: str, *extra: str, answers: Any = None) -> None:
        env = dict(os.environ, CTXENGINE_ENGINE=engine)
        self.process = subprocess.Popen(
            [
                str(CTXENGINE),
                "serve",
                "--store",
                str(tmp_path / "transcripts.sqlite"),
                "--data-dir",
                str(tmp_path / "data"),
                "--context-length",
                "6000",
                *extra,
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        self._next = 0
        self.answers = answers or {}
        self.server_calls: list[dict[str, Any]] = []
        self._lines: queue.Queue[bytes] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        """Hand the server's lines to :meth:`_read` (which can then wait with a timeout);
        an empty line at the end."""
        assert self.process.stdout
        for line in self.process.stdout:
            self._lines.put(line)
        self._lines.put(b"")

    def send_raw(self, line: bytes) -> dict[str, Any]:
        assert self.process.stdin and self.process.stdout
        self.process.stdin.write(line)
        self.process.stdin.flush()
        return self._read()

    def _read(self) -> dict[str, Any]:
        assert self.process.stdout and self.process.stdin
        while True:
            try:
                line = self._lines.get(timeout=ANSWER_TIMEOUT_S)
            except queue.Empty:
                raise AssertionError(f"no answer within {ANSWER_TIMEOUT_S} s") from None
            assert line, f"the server died: {self.stderr()}"
            message = strict_json(line)
            if isinstance(message, dict) and "method" in message:  # a server→plugin call
                self.server_calls.append(message)
                result = self.answers[message["method"]](message["params"])
                reply = {"jsonrpc": "2.0", "id": message["id"], "result": result}
                self.process.stdin.write((json.dumps(reply) + "\n").encode())
                self.process.stdin.flush()
                continue
            return message

    def request(self, method: str, **params: Any) -> dict[str, Any]:
        self._next += 1
        line = json.dumps({"jsonrpc": "2.0", "id": self._next, "method": method, "params": params})
        answer = self.send_raw(line.encode() + b"\n")
        assert answer.get("id") == self._next
        return answer

    def call(self, method: str, **params: Any) -> Any:
        answer = self.request(method, **params)
        assert "error" not in answer, answer
        return answer["result"]

    def stderr(self) -> str:
        if self.process.poll() is None:
            return "(running)"
        assert self.process.stderr
        return self.process.stderr.read().decode(errors="replace")

    def close(self) -> int:
        assert self.process.stdin
        self.process.stdin.close()
        code = self.process.wait(timeout=30)
        return code


def user(text: str, ts: int = 1) -> dict[str, Any]:
    return {"role": "user", "content": text, "timestamp": ts}


def assistant(text: str, ts: int = 2, prompt_tokens: int = 100, calls: Any = ()) -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    content += [
        {"type": "toolCall", "id": cid, "name": name, "arguments": args}
        for cid, name, args in calls
    ]
    return {
        "role": "assistant",
        "content": content,
        "api": "openai-completions",
        "provider": "scripted",
        "model": "m",
        "usage": {
            "input": prompt_tokens,
            "output": 20,
            "cacheRead": 0,
            "cacheWrite": 0,
            "totalTokens": prompt_tokens + 20,
            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
        },
        "stopReason": "toolUse" if calls else "stop",
        "timestamp": ts,
    }
