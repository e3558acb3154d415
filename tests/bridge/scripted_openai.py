"""A scripted OpenAI-compatible chat server on 127.0.0.1 for the gateway end-to-end test.

Run as ``python scripted_openai.py LOG ROUNDS [--kill-on N PATTERN]``: prints its
port, then answers ``POST /v1/chat/completions`` (streamed or not). Each turn (a
request ending in a user message) is answered with ROUNDS tool calls (to the
first tool the request offers, its result fed back by the gateway), then a final
text reply; usage is the request's size. A turn whose prompt says
``lcm_grep:WORDS`` starts with a call of the engine's ``lcm_grep`` for WORDS (when
the request offers it). Each request is appended to LOG.
With ``--kill-on N PATTERN`` it kills, while answering the N-th request, every
process whose command line contains PATTERN (the test's ``ctxengine serve``).
"""

from __future__ import annotations

import json
import os
import re
import signal
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

FILLER = "The quick brown fox jumps over the lazy dog. " * 12
#: In a prompt: "call lcm_grep for these words first".
GREP = re.compile(r"lcm_grep:([A-Za-z0-9]+)")


def kill_matching(pattern: str) -> list[int]:
    killed = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if pattern in cmdline and "serve" in cmdline:
            os.kill(int(entry.name), signal.SIGKILL)
            killed.append(int(entry.name))
    return killed


class Handler(BaseHTTPRequestHandler):
    count = 0
    log_path = Path("requests.jsonl")
    kill_on: tuple[int, str] | None = None
    rounds = 0

    def do_GET(self) -> None:
        self._json(200, {"object": "list", "data": [{"id": "scripted", "object": "model"}]})

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        Handler.count += 1
        number = Handler.count
        killed = []
        if Handler.kill_on and Handler.kill_on[0] == number:
            killed = kill_matching(Handler.kill_on[1])
        messages = body.get("messages") or []
        tools = [t.get("function", {}).get("name") for t in body.get("tools") or []]
        prompt_tokens = max(1, len(json.dumps(messages)) // 4)
        with Handler.log_path.open("a", encoding="utf-8") as log:
            log.write(
                json.dumps(
                    {
                        "n": number,
                        "path": self.path,
                        "messages": messages,
                        "tools": tools,
                        "prompt_tokens": prompt_tokens,
                        "killed": killed,
                    }
                )
                + "\n"
            )
        text = f"Reply {number}. {FILLER}"
        call = None
        rounds = _tool_rounds_so_far(messages)
        if tools and rounds < Handler.rounds:
            name, arguments = _pick_tool(tools), {"path": f"notes-{number}.txt"}
            grep = GREP.search(json.dumps(_prompt(messages)))
            if grep and rounds == 0 and "lcm_grep" in tools:
                name, arguments = "lcm_grep", {"pattern": grep.group(1)}
            call = {
                "index": 0,
                "id": f"call_{number}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments)},
            }
        usage = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": len(text) // 4,
            "total_tokens": prompt_tokens + len(text) // 4,
        }
        created = int(time.time())
        finish = "tool_calls" if call else "stop"
        message: dict = {"role": "assistant", "content": None if call else text}
        if call:
            message["tool_calls"] = [{k: v for k, v in call.items() if k != "index"}]
        if not body.get("stream"):
            choice = {"index": 0, "finish_reason": finish, "message": message}
            reply = {"id": f"c{number}", "object": "chat.completion", "created": created}
            reply.update(model=body.get("model", "scripted"), usage=usage, choices=[choice])
            self._json(200, reply)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        base = {
            "id": f"c{number}",
            "object": "chat.completion.chunk",
            "created": created,
            "model": body.get("model", "scripted"),
        }
        delta = {"role": "assistant", "tool_calls": [call]} if call else message
        chunks = [
            {**base, "choices": [{"index": 0, "delta": delta}]},
            {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]},
            {**base, "choices": [], "usage": usage},
        ]
        for chunk in chunks:
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()

    def _json(self, code: int, body: object) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:
        pass


def _pick_tool(tools: list[str]) -> str:
    """A harmless tool: reading a file (absent: the result is an error, which is fine)."""
    return "read" if "read" in tools else tools[0]


def _prompt(messages: list[dict]) -> object:
    """The content of the turn's prompt: the last user message that is not runtime context."""
    for message in reversed(messages):
        if message.get("role") == "user" and not _is_runtime_context(message):
            return message.get("content")
    return None


def _tool_rounds_so_far(messages: list[dict]) -> int:
    """Tool results in this turn: those after the prompt, past the gateway's trailing context."""
    rounds = 0
    index = len(messages) - 1
    while index >= 0 and _is_runtime_context(messages[index]):
        index -= 1
    while index >= 0 and messages[index].get("role") != "user":
        rounds += messages[index].get("role") == "tool"
        index -= 1
    return rounds


def _is_runtime_context(message: dict) -> bool:
    """The user-role context block the gateway appends to each request."""
    return message.get("role") == "user" and "OPENCLAW_INTERNAL_CONTEXT" in json.dumps(
        message.get("content")
    )


def main() -> None:
    Handler.log_path = Path(sys.argv[1])
    Handler.rounds = int(sys.argv[2])
    if len(sys.argv) >= 6 and sys.argv[3] == "--kill-on":
        Handler.kill_on = (int(sys.argv[4]), sys.argv[5])
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(server.server_port, flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
