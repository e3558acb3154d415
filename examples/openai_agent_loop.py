"""An OpenAI-SDK agent loop whose context is managed by ctxengine.

Works with any OpenAI-compatible server:

    OPENAI_BASE_URL=http://localhost:8000/v1 OPENAI_API_KEY=... \\
    CTXENGINE_EXAMPLE_MODEL=gpt-4o-mini python examples/openai_agent_loop.py "What is in setup.cfg?"

The agent has two local tools (``read_file``, ``list_dir``, confined to the current
directory) plus whatever tools the active engine offers (dispatched through
``Session.call_engine_tool``). The engine is chosen by the slot (``--engine`` is not
parsed here: use ``CTXENGINE_ENGINE`` or the config file). Needs ``pip install openai``
(or ``pip install 'ctxengine-host[examples]'``).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import openai

from ctxengine_host import ContextHost

SYSTEM_PROMPT = (
    "You are a helpful coding assistant. Use the tools to look at files in the current "
    "directory before answering questions about them. Answer briefly."
)
LOCAL_TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a text file under the current directory.",
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string"}},
                "required": ["path"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "list_dir",
            "description": "List a directory under the current directory.",
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string"}},
                "required": [],
            },
        },
    },
]
MAX_STEPS = 8


def confined(path: str) -> Path:
    """``path`` resolved inside the current directory, or ValueError."""
    root = Path.cwd().resolve()
    target = (root / path).resolve()
    if root != target and root not in target.parents:
        raise ValueError(f"{path} is outside the working directory")
    return target


def run_local_tool(name: str, args: dict[str, Any]) -> str:
    """The result text of one of our own tools (errors are returned to the model)."""
    try:
        if name == "read_file":
            return confined(str(args["path"])).read_text(encoding="utf-8")[:20_000]
        if name == "list_dir":
            entries = sorted(p.name for p in confined(str(args.get("path") or ".")).iterdir())
            return "\n".join(entries)
    except (OSError, ValueError, KeyError) as exc:
        return f"error: {exc}"
    return f"error: unknown tool {name}"


def is_overflow(exc: openai.BadRequestError) -> bool:
    """Whether the provider rejected the request for being longer than the window."""
    text = str(exc).lower()
    return "context_length_exceeded" in text or "maximum context length" in text


def assistant_dict(message: Any) -> dict[str, Any]:
    """The SDK's message as the plain OpenAI dict the session stores."""
    data = message.model_dump(exclude_none=True)
    out: dict[str, Any] = {"role": "assistant", "content": data.get("content")}
    if data.get("tool_calls"):
        out["tool_calls"] = [
            {"id": c["id"], "type": "function", "function": c["function"]}
            for c in data["tool_calls"]
        ]
    return out


def run(task: str) -> str:
    """Answer ``task`` with tools; returns the final assistant text."""
    client = openai.OpenAI()  # OPENAI_BASE_URL and OPENAI_API_KEY from the environment
    model = os.environ.get("CTXENGINE_EXAMPLE_MODEL", "gpt-4o-mini")
    context_length = int(os.environ.get("CTXENGINE_CONTEXT_LENGTH", "32768"))
    host = ContextHost.from_config(model=model, context_length=context_length)
    try:
        with host.open_session(system_prompt=SYSTEM_PROMPT, tools=LOCAL_TOOLS) as session:
            session.add_user_message(task)
            answer = ""
            for _ in range(MAX_STEPS):
                request = session.build_request()
                try:
                    response = client.chat.completions.create(
                        model=model, messages=request.messages, tools=request.tools or None
                    )
                except openai.BadRequestError as exc:
                    if not is_overflow(exc):
                        raise
                    request = session.handle_context_overflow(exc)
                    response = client.chat.completions.create(
                        model=model, messages=request.messages, tools=request.tools or None
                    )
                message = assistant_dict(response.choices[0].message)
                usage = response.usage.model_dump() if response.usage else None
                session.record_response(message, usage)
                calls = message.get("tool_calls") or []
                if not calls:
                    answer = message.get("content") or ""
                    break
                engine_tools = {t["function"]["name"] for t in request.tools} - {
                    t["function"]["name"] for t in LOCAL_TOOLS
                }
                results = []
                for call in calls:
                    name = call["function"]["name"]
                    args = json.loads(call["function"].get("arguments") or "{}")
                    if name in engine_tools:
                        output = session.call_engine_tool(name, args)
                    else:
                        output = run_local_tool(name, args)
                    results.append({"role": "tool", "tool_call_id": call["id"], "content": output})
                session.record_tool_results(results)
            report = session.finish_turn()
            print(
                f"[ctxengine] engine={report.engine} live={report.live_messages} "
                f"request_tokens={report.request_tokens}",
                file=sys.stderr,
            )
            return answer
    finally:
        host.close()


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit('usage: python examples/openai_agent_loop.py "your task"')
    print(run(" ".join(sys.argv[1:])))
