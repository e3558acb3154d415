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
    elif shape == "long-system-prompt":
        session = _long_system_prompt(40)
    else:
        raise ValueError(f"unknown shape {shape!r}; use one of {', '.join(SHAPES)}")
    path, _ = write_session(directory / f"{shape}.jsonl", session)
    return path


def _long_system_prompt(steps: int) -> GeneratedSession:
    """A coding agent's session as Codex sends one: a system prompt of ~7,500 tokens (the
    host's budget leaves it out, so an engine must not count it again) and file reads of
    2,000-5,000 tokens each."""
    rules = "\n".join(
        f"- Rule {n}: keep changes minimal, run the tests before finishing, and explain "
        f"each edit to file {n} in one sentence." for n in range(280)
    )  # fmt: skip
    messages: list[dict] = [
        {"role": "system", "content": "You are a coding agent.\n" + rules},
        {"role": "user", "content": "Port the settings loader to the new schema."},
    ]
    for step in range(steps):
        arguments = json.dumps({"path": f"m{step}.py"})
        call = {"id": f"call_{step}", "type": "function",
                "function": {"name": "read_file", "arguments": arguments}}  # fmt: skip
        size = 150 + 70 * (step % 4)
        body = "\n".join(f"def setting_{step}_{n}(value):  # schema v{n}" for n in range(size))
        messages += [
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": call["id"], "content": body},
        ]
        if step % 8 == 7:
            messages += [
                {"role": "assistant", "content": f"Ported modules up to m{step}.py."},
                {"role": "user", "content": "Go on with the next ones."},
            ]
    messages.append({"role": "assistant", "content": "Every module is ported."})
    header = {HEADER_KEY: {"format_version": FORMAT_VERSION, "tools": TOOLS}}
    return GeneratedSession(header, messages, [])


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
