"""An OpenAI-SDK agent loop whose context is managed by ctxengine.

Works with any OpenAI-compatible server:

    OPENAI_BASE_URL=http://localhost:8000/v1 OPENAI_API_KEY=... \\
    CTXENGINE_EXAMPLE_MODEL=gpt-4o-mini python examples/openai_agent_loop.py "What is in setup.cfg?"

The agent has two local tools (``read_file``, ``list_dir``, confined to the current
directory) plus whatever tools the active engine offers (dispatched through
``Session.call_engine_tool``). The engine is chosen by the slot (``--engine`` is not
parsed here: use ``CTXENGINE_ENGINE`` or the config file). Needs ``pip install openai``
(or ``pip install 'ctxengine-host[examples]'``).

A setup problem (the ``openai`` package missing, no ``OPENAI_API_KEY``, a server that
cannot be reached or refuses the key or the model) ends the run with one line naming
the setting to fix, not a traceback.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from ctxengine_host import ContextHost

try:
    import openai
except ImportError:
    sys.exit(
        "openai_agent_loop: the openai package is not installed: pip install openai "
        "(or pip install 'ctxengine-host[examples]')"
    )

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


class SetupError(Exception):
    """A setting to fix before the example can run; the message names it."""


def settings() -> tuple[str, int]:
    """The model and the context window, from the environment, checked."""
    if not os.environ.get("OPENAI_API_KEY"):
        raise SetupError(
            "OPENAI_API_KEY is not set: export your key (any non-empty value for a local "
            "server that needs none)"
        )
    raw_length = os.environ.get("CTXENGINE_CONTEXT_LENGTH", "32768")
    if not raw_length.isdigit() or int(raw_length) <= 0:
        raise SetupError(f"CTXENGINE_CONTEXT_LENGTH={raw_length!r}: use a positive integer")
    return os.environ.get("CTXENGINE_EXAMPLE_MODEL", "gpt-4o-mini"), int(raw_length)


def setup_error(exc: Exception, client: Any, model: str) -> SetupError | None:
    """The setting a provider error points at (None: not a setup problem)."""
    where = f"the server at {client.base_url}"
    if isinstance(exc, openai.APIConnectionError):
        return SetupError(f"cannot reach {where}: set OPENAI_BASE_URL to a running server")
    if isinstance(exc, openai.AuthenticationError):
        return SetupError(f"{where} refused the key: check OPENAI_API_KEY")
    if isinstance(exc, openai.NotFoundError):
        return SetupError(f"{where} has no model {model!r}: set CTXENGINE_EXAMPLE_MODEL")
    return None


def run(task: str) -> str:
    """Answer ``task`` with tools; returns the final assistant text."""
    model, context_length = settings()
    client = openai.OpenAI()  # OPENAI_BASE_URL and OPENAI_API_KEY from the environment
    try:
        return _run(task, client, model, context_length)
    except openai.OpenAIError as exc:
        found = setup_error(exc, client, model)
        if found is None:
            raise
        raise found from exc


def _run(task: str, client: Any, model: str, context_length: int) -> str:
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
    try:
        print(run(" ".join(sys.argv[1:])))
    except SetupError as exc:
        sys.exit(f"openai_agent_loop: {exc}")
