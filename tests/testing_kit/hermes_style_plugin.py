"""A Hermes plugin directory in the layout real ones use (hermes-lcm's), written by tests.

Hyphenated directory (``hermes-recall``), a ``plugin.yaml`` with lists, an
``__init__.py`` whose ``register(ctx)`` registers the engine plus a tool, a
command, a hook and a skill, an engine named ``recall`` (not its directory's
name) that keeps a ``sqlite3`` connection (so it cannot be deep-copied), and
the imports real plugins make: ``agent.context_engine``,
``agent.context_compressor.resolve_model_threshold`` and
``agent.auxiliary_client.call_llm`` for its summaries. Nothing in it knows
about ctxengine.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

DIRECTORY = "hermes-recall"
MANIFEST_NAME = "hermes-recall-plugin"
ENGINE_NAME = "recall"
TOOL = "recall_grep"

MANIFEST = """\
name: hermes-recall-plugin
version: 0.3.1
description: "Keeps every message in SQLite; summarizes old turns"
author: "Tests"
provides_tools:
  - recall_grep
provides_hooks:
  - post_llm_call
"""

INIT = '''\
"""Recall: every message in SQLite, old turns summarized by the auxiliary LLM."""

import logging

logger = logging.getLogger(__name__)


def register(ctx):
    from .engine import RecallEngine
    from .schemas import RECALL_GREP

    engine = RecallEngine()
    ctx.register_context_engine(engine)
    ctx.register_tool(
        name="recall_grep", toolset="context_engine", schema=RECALL_GREP,
        handler=lambda args, **kw: engine.handle_tool_call("recall_grep", args, **kw),
    )
    ctx.register_command("recall", lambda raw: engine.get_status(), description="status")
    ctx.register_hook("post_llm_call", lambda **kw: None)
    register_skill = getattr(ctx, "register_skill", None)
    if callable(register_skill):
        register_skill("hermes-recall", None, description="how to recall")
'''

SCHEMAS = """\
RECALL_GREP = {
    "name": "recall_grep",
    "description": "Search every stored message for a substring.",
    "parameters": {
        "type": "object",
        "properties": {"pattern": {"type": "string"}},
        "required": ["pattern"],
    },
}
"""

ENGINE = """\
import json
import os
import sqlite3
import tempfile
from typing import Any, Dict, List, Optional

from agent.auxiliary_client import call_llm
from agent.context_compressor import resolve_model_threshold
from agent.context_engine import ContextEngine

from .schemas import RECALL_GREP

SUMMARY_TAG = "[recall summary]"


class RecallEngine(ContextEngine):
    def __init__(self):
        self.threshold_percent = 0.6
        self.model_thresholds = {}
        self._path = os.path.join(tempfile.mkdtemp(prefix="recall-"), "recall.db")
        self._db = sqlite3.connect(self._path, check_same_thread=False)
        self._db.execute("CREATE TABLE IF NOT EXISTS messages (role TEXT, content TEXT)")
        self._stored = 0
        self.summaries = 0

    @property
    def name(self) -> str:
        return "recall"

    def update_from_response(self, usage: Dict[str, Any]) -> None:
        self.last_prompt_tokens = usage.get("prompt_tokens", 0)
        self.last_completion_tokens = usage.get("completion_tokens", 0)
        self.last_total_tokens = usage.get("total_tokens", 0)

    def should_compress(self, prompt_tokens: int = None) -> bool:
        tokens = self.last_prompt_tokens if prompt_tokens is None else prompt_tokens
        return bool(self.threshold_tokens) and tokens >= self.threshold_tokens

    def update_model(self, model, context_length, base_url="", api_key="", provider="",
                     api_mode=""):
        self.context_length = context_length
        self.threshold_percent = resolve_model_threshold(
            model, self.model_thresholds, self.threshold_percent, provider)
        self.threshold_tokens = int(context_length * self.threshold_percent)

    def _store(self, messages):
        fresh = [m for m in messages[self._stored:] if isinstance(m.get("content"), str)
                 and not m["content"].startswith(SUMMARY_TAG)]
        self._db.executemany("INSERT INTO messages VALUES (?, ?)",
                             [(m.get("role"), m["content"]) for m in fresh])
        self._db.commit()

    def compress(self, messages: List[Dict[str, Any]], current_tokens: Optional[int] = None,
                 focus_topic: Optional[str] = None, force: bool = False,
                 memory_context: str = "") -> List[Dict[str, Any]]:
        self._store(messages)
        head = [m for m in messages[:1] if m.get("role") == "system"]
        body = messages[len(head):]
        keep = max(4, len(body) // 3)
        old, tail = body[:-keep], body[-keep:]
        while tail and tail[0].get("role") == "tool":
            old, tail = old + tail[:1], tail[1:]
        if not old:
            return messages
        response = call_llm(
            task="compression",
            messages=[{"role": "user", "content": "Summarize:\\n" + "\\n".join(
                str(m.get("content") or "") for m in old)}],
            temperature=0.3, max_tokens=300,
        )
        text = response.choices[0].message.content
        self.summaries += 1
        self.compression_count += 1
        summary = {"role": "user", "content": SUMMARY_TAG + " " + text}
        self._stored = len(head) + 1
        return head + [summary] + tail

    def get_tool_schemas(self):
        return [RECALL_GREP]

    def handle_tool_call(self, name, args, **kwargs):
        if name != "recall_grep":
            return json.dumps({"error": "unknown tool " + name})
        rows = self._db.execute(
            "SELECT role, content FROM messages WHERE instr(content, ?) > 0 LIMIT 5",
            (str(args.get("pattern", "")),)).fetchall()
        return json.dumps({"matches": [{"role": r, "content": c[:200]} for r, c in rows]})
"""


def write_hermes_style_plugin(plugins_dir: Path) -> Path:
    """Write the plugin under ``plugins_dir``; return its directory."""
    directory = plugins_dir / DIRECTORY
    directory.mkdir(parents=True)
    for name, text in {
        "plugin.yaml": MANIFEST,
        "__init__.py": INIT,
        "schemas.py": SCHEMAS,
        "engine.py": ENGINE,
    }.items():
        (directory / name).write_text(textwrap.dedent(text), encoding="utf-8")
    return directory
