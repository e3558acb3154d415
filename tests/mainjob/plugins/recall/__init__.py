"""A directory engine with recall tools, so replay's tool probes run against a real engine.

It keeps every ingested message by uid; ``recall_grep`` scores messages by how many
query words they contain and ``recall_expand`` returns one message verbatim.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ctxengine_host.discovery.fallback import SlidingWindowEngine


class RecallEngine(SlidingWindowEngine):
    name = "recall"
    version = "0.1.0"
    display_name = "Sliding window with recall tools (test engine)"

    def __init__(self) -> None:
        super().__init__()
        self.archive: dict[str, dict[str, Any]] = {}

    def ingest(self, session_id: str, messages: list[dict[str, Any]]) -> None:
        for message in messages:
            uid = message.get("message_uid")
            if uid:
                self.archive[uid] = dict(message)

    def get_tool_schemas(self) -> list[dict[str, Any]]:
        return [
            {
                "name": "recall_grep",
                "description": "Search earlier messages by words.",
                "parameters": {
                    "type": "object",
                    "properties": {"query": {"type": "string"}},
                    "required": ["query"],
                },
            },
            {
                "name": "recall_expand",
                "description": "Return one earlier message verbatim.",
                "parameters": {
                    "type": "object",
                    "properties": {"message_uid": {"type": "string"}},
                    "required": ["message_uid"],
                },
            },
        ]

    def handle_tool_call(self, name: str, args: dict[str, Any], **kwargs: Any) -> str:
        if name == "recall_grep":
            return json.dumps({"hits": self._search(str(args.get("query", "")))})
        if name == "recall_expand":
            message = self.archive.get(str(args.get("message_uid", "")))
            if message is None:
                return json.dumps({"error": "no such message"})
            return json.dumps({"message_uid": args["message_uid"], "content": message["content"]})
        return json.dumps({"error": f"Unknown context engine tool: {name}"})

    def _search(self, query: str) -> list[dict[str, str]]:
        words = [w for w in re.findall(r"\w+", query.lower()) if len(w) > 2]
        scored = []
        for uid, message in self.archive.items():
            text = str(message.get("content") or "")
            lower = text.lower()
            score = sum(1 for w in words if w in lower)
            if score:
                scored.append((score, -len(text), uid, text))
        scored.sort(reverse=True)
        return [{"message_uid": uid, "snippet": text[:600]} for _, _, uid, text in scored[:5]]
