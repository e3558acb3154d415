"""The smallest agent loop driving a ctxengine ``Session``: no SDK, no network, no key.

The "model" is a deterministic function: asked about arithmetic it calls the
``add`` tool, then answers with the tool's result; otherwise it echoes. Every
turn goes through the runtime exactly as a real loop would: add the user
message, build the request, "call the provider", record the response (and tool
results), finish the turn. Run it:

    python examples/minimal_agent_loop.py [--turns 60] [--context-length 8192]

With a small window the engine compacts along the way; the per-turn lines show
the live and stored message counts, the request size and each compaction.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

from ctxengine_host import ContextHost

SYSTEM_PROMPT = "You are a calculator assistant. Use the add tool for sums."
ADD_TOOL = {
    "type": "function",
    "function": {
        "name": "add",
        "description": "Add two integers.",
        "parameters": {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
        },
    },
}


def fake_model(messages: list[dict[str, Any]], step: int) -> dict[str, Any]:
    """A deterministic stand-in for a provider: the assistant message for ``messages``."""
    last = messages[-1]
    if last["role"] == "tool":
        return {"role": "assistant", "content": f"The sum is {last['content']}."}
    text = str(last.get("content") or "")
    numbers = [int(n) for n in re.findall(r"-?\d+", text)]
    if "add" in text and len(numbers) >= 2:
        arguments = json.dumps({"a": numbers[0], "b": numbers[1]})
        call = {
            "id": f"call_{step}",
            "type": "function",
            "function": {"name": "add", "arguments": arguments},
        }
        return {"role": "assistant", "content": None, "tool_calls": [call]}
    return {"role": "assistant", "content": f"You said: {text[:200]}"}


def usage_for(request_tokens: int, reply: dict[str, Any]) -> dict[str, int]:
    """What a provider would report: prompt = the request, completion = a rough reply size."""
    completion = max(1, len(json.dumps(reply)) // 4)
    return {"prompt_tokens": request_tokens, "completion_tokens": completion}


def run_tool(call: dict[str, Any]) -> str:
    args = json.loads(call["function"]["arguments"])
    return str(int(args["a"]) + int(args["b"]))


def user_text(turn: int) -> str:
    if turn % 3 == 0:
        return f"Please add {turn} and {turn * 2}."
    return f"Turn {turn}: here are some notes to remember. " + "lorem ipsum dolor " * 25


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="A minimal agent loop on ctxengine.")
    parser.add_argument("--turns", type=int, default=60)
    parser.add_argument("--context-length", type=int, default=8192)
    parser.add_argument("--store", help="transcript store path (default: a temp file)")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory() as tmp:
        store = Path(args.store) if args.store else Path(tmp) / "transcripts.db"
        host = ContextHost.from_config(
            model="gpt-4", context_length=args.context_length, store_path=store
        )
        print(f"engine: {host.engine_name}  window: {args.context_length} tokens")
        with host, host.open_session(system_prompt=SYSTEM_PROMPT, tools=[ADD_TOOL]) as session:
            for turn in range(args.turns):
                session.add_user_message(user_text(turn))
                for step in range(4):  # model calls within one turn
                    request = session.build_request()
                    reply = fake_model(request.messages, step)
                    session.record_response(reply, usage_for(request.estimated_tokens, reply))
                    calls = reply.get("tool_calls") or []
                    if not calls:
                        break
                    session.record_tool_results(
                        [
                            {"role": "tool", "tool_call_id": c["id"], "content": run_tool(c)}
                            for c in calls
                        ]
                    )
                report = session.finish_turn()
                events = ", ".join(
                    f"{e.reason} {e.tokens_before}->{e.tokens_after}" for e in report.compactions
                )
                print(
                    f"turn {report.turn:3d}: live {report.live_messages:3d} "
                    f"stored {report.stored_messages:3d} request {report.request_tokens:5d}/"
                    f"{args.context_length} tokens{'  compacted: ' + events if events else ''}"
                )
            status = session.status()
        print(
            f"done: {status['stored_messages']} messages stored, "
            f"{status['live_messages']} live, mode {status['mode']}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
