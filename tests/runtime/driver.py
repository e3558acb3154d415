"""A scripted three-turn conversation that reaches every engine method the runtime calls."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from ctxengine_host.runtime.host import ContextHost

SYSTEM = "You are a careful coding assistant."
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a file",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
        },
    }
]
#: record_response() in turn 2 reports this prompt size; RecordingEngine compacts on it.
COMPRESS_PROMPT_TOKENS = 222


def tool_call(call_id: str, path: str) -> dict[str, Any]:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": "read_file", "arguments": json.dumps({"path": path})},
    }


def drive(
    host: ContextHost,
    session_id: str = "main",
    on_request: Callable[[Any], None] | None = None,
) -> list[Any]:
    """Run the script; return the TurnReports.

    ``on_request`` sees each request the main session builds (the fault suites compare them).
    """
    reports = []

    def request(session: Any) -> None:
        built = session.build_request()
        if on_request is not None:
            on_request(built)

    with host.open_session(session_id, system_prompt=SYSTEM, tools=TOOLS) as session:
        session.add_user_message("Read setup.py please.")
        request(session)
        session.record_response(
            {"role": "assistant", "content": None, "tool_calls": [tool_call("call_1", "setup.py")]},
            {"prompt_tokens": 100, "completion_tokens": 10},
        )
        session.record_tool_results(
            [{"role": "tool", "tool_call_id": "call_1", "content": "from setuptools import x"}]
        )
        request(session)
        session.record_response(
            {"role": "assistant", "content": "It imports setuptools."},
            {"prompt_tokens": 150, "completion_tokens": 5, "total_tokens": 155},
        )
        reports.append(session.finish_turn())

        session.add_user_message("Summarize what we know.")
        request(session)
        session.record_response(
            {"role": "assistant", "content": "We read setup.py."},
            {"prompt_tokens": COMPRESS_PROMPT_TOKENS, "completion_tokens": 6},
        )
        reports.append(session.finish_turn())

        session.add_user_message("Thanks. Anything else?")
        request(session)
        session.record_response({"role": "assistant", "content": "No."}, None)
        session.call_engine_tool("recall", {"q": "setup"})
        session.status()
        session.compact(focus_topic="setup.py")
        child = session.spawn_subagent("fork")
        child.add_user_message("Sub-task: check the tests.")
        child.build_request()
        child.record_response({"role": "assistant", "content": "Tests pass."}, None)
        child.finish_turn()
        child.end()
        reports.append(session.finish_turn())
    return reports


def transcript(host: ContextHost) -> dict[str, list[tuple[str, str, str]]]:
    """Every session's rows that hold what the user, the provider or tools said.

    Rows written by an engine's compaction, and a fork's copies of its parent's live
    view (which depend on how the engine compacted), are left out; uids and
    timestamps too.
    Sub-agent sessions are keyed by their parent's id plus "/sub".
    """
    out: dict[str, list[tuple[str, str, str]]] = {}
    for sid in host.store.session_ids():
        key = sid.split("/sub-")[0] + ("/sub" if "/sub-" in sid else "")
        out[key] = [
            (r.message["role"], json.dumps(_body(r.message), sort_keys=True), r.origin)
            for r in host.store.rows(sid)
            if r.origin not in ("engine", "fork")
        ]
    return out


def _body(message: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in message.items() if not k.startswith("_") and k != "message_uid"}
