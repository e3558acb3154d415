"""Shared by the framework scenarios (run by a framework env's python, under the net guard)."""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from ctxengine_host.config import load_config
from ctxengine_host.runtime.host import ContextHost

#: Small enough that a few turns of long tool results force compaction.
CONTEXT_LENGTH = 3000
RESERVE_OUTPUT_TOKENS = 256


def host_kwargs(store_path: str) -> dict[str, Any]:
    """The engine comes from the slot (``CTXENGINE_ENGINE``), as a user would select it."""
    assert os.environ.get("CTXENGINE_ENGINE") in ("legacy", "lcm")
    config = load_config(None)
    config.config.context.reserve_output_tokens = RESERVE_OUTPUT_TOKENS
    return {
        "model": "gpt-4o",
        "context_length": CONTEXT_LENGTH,
        "config": config,
        "store_path": store_path,
    }


def make_host(store_path: str) -> ContextHost:
    return ContextHost(None, **host_kwargs(store_path))


def tool_output(turn: int) -> str:
    """A long tool result (about 500 tokens) with a findable fact."""
    filler = " ".join(f"line{turn}-{i} of the build log shows nothing unusual" for i in range(55))
    return f"fact-{turn}: the flaky test is test_{turn}_retry. {filler}"


def stored_texts(host: ContextHost, session_id: str) -> list[str]:
    rows = host.store.rows(session_id)
    texts = []
    for row in rows:
        message = row.message
        texts.append(json.dumps(message))
    return texts


def require_stored(host: ContextHost, session_id: str, needles: list[str]) -> None:
    """Every message of the conversation is in the store, whatever the engine compacted."""
    texts = "\n".join(stored_texts(host, session_id))
    missing = [n for n in needles if n not in texts]
    assert not missing, f"not in the stored transcript: {missing}"


def report(result: dict[str, Any]) -> None:
    json.dump(result, sys.stdout)
    sys.stdout.write("\n")


def engine_answer(host: ContextHost, session_id: str, call_id: str) -> str:
    """The stored result of one tool call (what the engine tool answered, verbatim)."""
    for row in host.store.rows(session_id):
        if row.message.get("role") == "tool" and row.message.get("tool_call_id") == call_id:
            return row.message["content"]
    raise AssertionError(f"no stored result for tool call {call_id}")
