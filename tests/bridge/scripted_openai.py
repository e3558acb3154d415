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
The HTTP side is ``tests/support/chat_server.py`` (on its ``PYTHONPATH``).
"""

from __future__ import annotations

import json
import os
import re
import signal
import sys
from pathlib import Path

from chat_server import ChatServer, usage

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


class Script:
    """The scripted model's answers; every request is appended to ``log_path``."""

    def __init__(self, log_path: Path, rounds: int, kill_on: tuple[int, str] | None) -> None:
        self.log_path = log_path
        self.rounds = rounds
        self.kill_on = kill_on

    def __call__(self, body: dict, number: int) -> tuple[dict, dict[str, int]]:
        killed = []
        if self.kill_on and self.kill_on[0] == number:
            killed = kill_matching(self.kill_on[1])
        messages = body.get("messages") or []
        tools = [t.get("function", {}).get("name") for t in body.get("tools") or []]
        prompt_tokens = max(1, len(json.dumps(messages)) // 4)
        record = {"n": number, "messages": messages, "tools": tools}
        record.update(prompt_tokens=prompt_tokens, killed=killed)
        with self.log_path.open("a", encoding="utf-8") as log:
            log.write(json.dumps(record) + "\n")
        text = f"Reply {number}. {FILLER}"
        tokens = usage(prompt_tokens, len(text) // 4)
        rounds = _tool_rounds_so_far(messages)
        if not tools or rounds >= self.rounds:
            return {"content": text}, tokens
        name, arguments = _pick_tool(tools), {"path": f"notes-{number}.txt"}
        grep = GREP.search(json.dumps(_prompt(messages)))
        if grep and rounds == 0 and "lcm_grep" in tools:
            name, arguments = "lcm_grep", {"pattern": grep.group(1)}
        call = {
            "id": f"call_{number}",
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments)},
        }
        return {"tool_calls": [call]}, tokens


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
    kill_on = None
    if len(sys.argv) >= 6 and sys.argv[3] == "--kill-on":
        kill_on = (int(sys.argv[4]), sys.argv[5])
    server = ChatServer(Script(Path(sys.argv[1]), int(sys.argv[2]), kill_on))
    print(server.port, flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
