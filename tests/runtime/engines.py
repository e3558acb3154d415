"""Real engine classes, one per behaviour, for the runtime tests."""

from __future__ import annotations

import copy
import functools
import threading
from typing import Any

from ctxengine_host.contract.engine import ContextEngine
from ctxengine_host.contract.models import AssembleResult, CompactResult

#: Released at the end of each test so that hung calls finish.
RELEASE = threading.Event()


class QuietEngine(ContextEngine):
    """Only the required methods; never compacts."""

    name = "quiet"

    def update_from_response(self, usage):
        self.last_prompt_tokens = usage["prompt_tokens"]

    def should_compress(self, prompt_tokens=None):
        return False

    def compress(self, messages, current_tokens=None, focus_topic=None):
        return messages


class RecordingEngine(ContextEngine):
    """Implements every optional hook and records each call (method, short detail)."""

    name = "recording"
    turn_maintenance_mode = "foreground"

    def __init__(self, config=None, context=None):
        super().__init__(config, context)
        self.calls: list[tuple[str, Any]] = []
        self.compress_on_prompt_tokens: set[int] = set()
        self.compress_result: Any = "echo"
        self.select_result: Any = None
        self.preflight = False

    def _rec(self, method, detail=None):
        self.calls.append((method, detail))

    def update_from_response(self, usage):
        self._rec("update_from_response", dict(usage))
        self.last_prompt_tokens = usage["prompt_tokens"]

    def should_compress(self, prompt_tokens=None):
        self._rec("should_compress", prompt_tokens)
        return prompt_tokens in self.compress_on_prompt_tokens

    def compress(self, messages, current_tokens=None, focus_topic=None, force=False, deadline=None):
        self._rec("compress", {"n": len(messages), "force": force, "focus": focus_topic})
        result = self.compress_result
        if result == "echo":
            return messages
        return result(messages) if callable(result) else copy.deepcopy(result)

    def on_session_start(self, session_id, **kwargs):
        self._rec("on_session_start", session_id)

    def bootstrap(self, session_id, messages, runtime_settings):
        self._rec("bootstrap", len(messages))

    def ingest(self, session_id, messages):
        self._rec("ingest", [m.get("role") for m in messages])

    def select_context(
        self,
        request_messages,
        *,
        conversation_messages=None,
        incoming_message=None,
        budget_tokens=0,
        runtime_settings=None,
    ):
        self._rec("select_context", len(request_messages))
        result = self.select_result
        return result(request_messages, conversation_messages) if callable(result) else result

    def on_turn_complete(self, messages, usage=None, **kwargs):
        self._rec("on_turn_complete", usage)

    def maintain(self, session_id, runtime_settings, transcript):
        self._rec("maintain", runtime_settings.runtime.mode)

    def should_compress_preflight(self, messages):
        self._rec("should_compress_preflight", len(messages))
        return self.preflight

    def get_tool_schemas(self):
        self._rec("get_tool_schemas")
        return [
            {
                "name": "recall",
                "description": "Find a message",
                "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
            }
        ]

    def handle_tool_call(self, name, args, **kwargs):
        self._rec("handle_tool_call", name)
        return '{"found": []}'

    def get_status(self):
        self._rec("get_status")
        return {**super().get_status(), "calls": len(self.calls)}

    def on_session_reset(self):
        self._rec("on_session_reset")
        super().on_session_reset()

    def on_session_end(self, session_id, messages):
        self._rec("on_session_end", len(messages))

    def prepare_subagent_spawn(self, parent_session_id, child_session_id, context_mode, ttl_s):
        self._rec("prepare_subagent_spawn", context_mode)
        return None

    def on_subagent_ended(self, child_session_id, reason):
        self._rec("on_subagent_ended", reason)

    def clone_for_agent(self):
        clone = copy.copy(self)
        clone.calls = self.calls  # the test reads one shared log
        return clone

    def dispose(self):
        self._rec("dispose")

    def methods(self) -> list[str]:
        return [m for m, _ in self.calls]


#: Values that break each method's result contract (method -> list of (label, value)).
INVALID_RESULTS: dict[str, list[tuple[str, Any]]] = {
    "should_compress": [("str", "yes"), ("int", 1)],
    "should_compress_preflight": [("str", "yes")],
    "compress": [
        ("str", "shorter"),
        ("non-dict item", ["not a message"]),
        ("orphan tool result", [{"role": "tool", "tool_call_id": "x", "content": "?"}]),
        ("no user message", [{"role": "assistant", "content": "summary"}]),
        ("bad CompactResult dict", {"ok": "maybe", "messages": 3}),
    ],
    "select_context": [
        ("str", "pick these"),
        ("non-dict item", [{"role": "user", "content": "hi"}, 42]),
        ("orphan tool result", [{"role": "tool", "tool_call_id": "x", "content": "?"}]),
        ("system in the middle", [{"role": "user", "content": "a"}, {"role": "system"}]),
    ],
    "ingest": [("int", 7)],
    "bootstrap": [("str", "done")],
    "maintain": [("list", [1, 2])],
    "get_tool_schemas": [("dict", {"name": "x"})],
    "handle_tool_call": [("int", 5)],
    "get_status": [("list", [1])],
    "prepare_subagent_spawn": [("str", "rollback")],
    "clone_for_agent": [("None", None), ("str", "engine")],
}


def faulty_engine(method: str, fault: str, value: Any = None) -> RecordingEngine:
    """A RecordingEngine whose ``method`` raises, hangs, or returns ``value``.

    The replacement keeps the method's signature (parameters are passed by name).
    """
    original = getattr(RecordingEngine, method)

    @functools.wraps(original)
    def broken(self, *args, **kwargs):
        self._rec(f"{method}!{fault}")
        if fault == "raise":
            raise RuntimeError(f"injected failure in {method}")
        if fault == "hang":
            RELEASE.wait(10)
            return original(self, *args, **kwargs)
        return copy.deepcopy(value)

    cls = type(f"Faulty_{method}_{fault}", (RecordingEngine,), {method: broken, "name": "faulty"})
    return cls()


class SummarizingEngine(RecordingEngine):
    """Compacts everything before the last user message into one engine-authored summary."""

    name = "summarizing"
    SUMMARY_UID = "5" * 32

    def __init__(self, config=None, context=None):
        super().__init__(config, context)
        self.compress_result = self._summarize

    def _summarize(self, messages):
        last_user = max(i for i, m in enumerate(messages) if m["role"] == "user")
        head = [m for m in messages[:last_user] if m["role"] == "system"]
        summary = {
            "role": "user",
            "content": f"[summary of {last_user - len(head)} messages]",
            "message_uid": self.SUMMARY_UID,
        }
        tail = messages[last_user:]
        return CompactResult(ok=True, compacted=True, messages=[*head, summary, *tail])


class OwnsCompactionEngine(RecordingEngine):
    """Owns compaction and keeps history itself: compress returns messages=None."""

    name = "owner"
    owns_compaction = True

    def __init__(self, config=None, context=None):
        super().__init__(config, context)
        self.compress_result = lambda messages: CompactResult(ok=True, compacted=False)


class AssemblingEngine(RecordingEngine):
    """select_context returns an AssembleResult: the last user message plus an addition."""

    name = "assembling"

    def __init__(self, config=None, context=None):
        super().__init__(config, context)
        self.select_result = self._assemble

    def _assemble(self, request, conversation):
        last_user = [m for m in conversation if m["role"] == "user"][-1]
        earlier = [m["message_uid"] for m in conversation if m is not last_user]
        return AssembleResult(
            messages=[last_user],
            estimated_tokens=0,
            system_prompt_addition="Recall: blue.",
            covers=earlier,  # the addition stands for them
        )


class BackgroundEngine(RecordingEngine):
    name = "background"
    turn_maintenance_mode = "background"

    def maintain(self, session_id, runtime_settings, transcript):
        self._rec(
            "maintain", {"thread": threading.current_thread().name, "rows": len(transcript.rows())}
        )
