"""Session files of every shape the engines must handle (#14): one long tool loop, many
short turns, parallel tool calls. Written with the project's own generator, so the same
call gives the same bytes."""

from __future__ import annotations

import json
from pathlib import Path

from ctxengine_host.replay.generator import (
    TOOLS,
    GeneratedSession,
    generate_session,
    generate_single_loop,
    write_session,
)
from ctxengine_host.replay.sessionfile import FORMAT_VERSION, HEADER_KEY

SHAPES = ("single-loop", "many-short-turns", "parallel-calls")


def write_shape(directory: Path, shape: str) -> Path:
    """A session file of ``shape`` in ``directory`` (probes beside it); returns its path."""
    if shape == "single-loop":
        session = generate_single_loop(150, 14)
    elif shape == "many-short-turns":
        session = generate_session(120, 14)
    elif shape == "parallel-calls":
        session = _parallel_calls(60)
    else:
        raise ValueError(f"unknown shape {shape!r}; use one of {', '.join(SHAPES)}")
    path, _ = write_session(directory / f"{shape}.jsonl", session)
    return path


def _parallel_calls(steps: int) -> GeneratedSession:
    """One task, then steps of three parallel calls each, with mid-size outputs."""
    messages: list[dict] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Find every caller of parse_config and fix them."},
    ]
    for step in range(steps):
        calls = [
            {
                "id": f"call_{step}_{k}",
                "type": "function",
                "function": {"name": "grep", "arguments": json.dumps({"pattern": f"p{step}{k}"})},
            }
            for k in range(3)
        ]
        messages.append({"role": "assistant", "content": None, "tool_calls": calls})
        for k, call in enumerate(calls):
            lines = "\n".join(f"src/mod{step}_{k}.py:{n}: parse_config(x{n})" for n in range(40))
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": lines})
    messages.append({"role": "assistant", "content": "Fixed every caller."})
    header = {HEADER_KEY: {"format_version": FORMAT_VERSION, "tools": TOOLS}}
    return GeneratedSession(header, messages, [])
