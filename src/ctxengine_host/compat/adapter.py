"""Any ctxengine engine, seen through the framework ABC's method set.

A framework host calls ``update_from_response``, ``should_compress``,
``compress(messages, current_tokens, focus_topic)`` returning a list,
``select_context`` returning a list or None, ``on_turn_complete``, and reads
the budget attributes directly. It offers fewer host capabilities than our
runtime (no bootstrap, maintain, summarizer service or sub-agent hooks), so an
engine whose ``host_requirements`` need more is refused at wrap time.
Our richer results are folded into what that host understands:
``CompactResult`` and ``AssembleResult`` become lists, a
``system_prompt_addition`` goes in front of the request's system message, the
``covers`` of the last selection are kept in ``last_select_covers`` (the live
messages the returned list represents without sending them), and ``ingest`` is
fed the new messages of each finished turn.
"""

from __future__ import annotations

import sys
from typing import Any

from ..models import AssembleResult, CompactResult, RuntimeSettings
from ..signatures import call_declared, is_implemented
from ..validation import host_requirement_problems
from .shims import is_shim

#: What a framework-style host does for an engine, in our capability vocabulary.
FRAMEWORK_HOST_CAPABILITIES: frozenset[str] = frozenset(
    {"assemble-before-prompt", "after-turn", "compact"}
)

#: Attributes a framework host reads (and may set) on the engine itself.
BUDGET_ATTRIBUTES = (
    "last_prompt_tokens",
    "last_completion_tokens",
    "last_total_tokens",
    "threshold_tokens",
    "context_length",
    "compression_count",
    "threshold_percent",
    "model_thresholds",
)

Message = dict[str, Any]


class HostRequirementError(ValueError):
    """The engine needs host capabilities the target host does not offer."""


class _Delegated:
    """An attribute read from and written to the wrapped engine."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, adapter: Any, owner: type | None = None) -> Any:
        if adapter is None:
            return self
        return getattr(adapter.engine, self.name)

    def __set__(self, adapter: Any, value: Any) -> None:
        setattr(adapter.engine, self.name, value)


class FrameworkEngineAdapter:
    """Wraps a ctxengine engine so a framework-style host can drive it."""

    last_prompt_tokens = _Delegated()
    last_completion_tokens = _Delegated()
    last_total_tokens = _Delegated()
    threshold_tokens = _Delegated()
    context_length = _Delegated()
    compression_count = _Delegated()
    threshold_percent = _Delegated()
    model_thresholds = _Delegated()

    def __init__(
        self,
        engine: Any,
        *,
        capabilities: frozenset[str] = FRAMEWORK_HOST_CAPABILITIES,
        execution_host: str = "framework",
    ) -> None:
        problems = host_requirement_problems(engine, capabilities)
        if problems:
            raise HostRequirementError(
                "; ".join(problems) + ". Run this engine under the ctxengine runtime, "
                "or pick an engine without these requirements."
            )
        self.engine = engine
        self.capabilities = frozenset(capabilities)
        #: What the last ``select_context`` declared covered (``AssembleResult.covers``).
        self.last_select_covers: list[Any] = []
        self.execution_host = execution_host
        self._session_id: str | None = None
        self._ingested = 0
        _register_with_real_framework()

    @property
    def name(self) -> str:
        return self.engine.name

    def __repr__(self) -> str:
        return f"FrameworkEngineAdapter({self.engine!r})"

    def _settings(self, budget_tokens: int | None = None) -> RuntimeSettings:
        return RuntimeSettings.model_validate(
            {
                "execution_host": self.execution_host,
                "model": {"context_length": self.engine.context_length or None},
                "engine_selection": {"selected": self.engine.name, "source": "explicit"},
                "limits": {"budget_tokens": budget_tokens},
            }
        )

    # Required methods.

    def update_from_response(self, usage: dict[str, Any]) -> None:
        self.engine.update_from_response(usage)

    def should_compress(self, prompt_tokens: int | None = None) -> bool:
        return bool(call_declared(self.engine.should_compress, {"prompt_tokens": prompt_tokens}))

    def compress(
        self,
        messages: list[Message],
        current_tokens: int | None = None,
        focus_topic: str | None = None,
    ) -> list[Message]:
        """The compacted list; an engine that keeps its own history is asked for its view."""
        result = call_declared(
            self.engine.compress,
            {
                "messages": messages,
                "current_tokens": current_tokens,
                "focus_topic": focus_topic,
                "force": False,
                "runtime_settings": self._settings(),
            },
        )
        if isinstance(result, list):
            return result
        if isinstance(result, CompactResult):
            if result.messages is not None:
                return result.messages
            if result.compacted:
                view = self.select_context(messages, budget_tokens=self.engine.threshold_tokens)
                if view:
                    return view
        return messages

    # Optional methods, in the framework's shapes.

    def select_context(
        self,
        request_messages: list[Message],
        *,
        conversation_messages: list[Message] | None = None,
        incoming_message: Message | None = None,
        budget_tokens: int = 0,
    ) -> list[Message] | None:
        if not is_implemented(self.engine, "select_context"):
            return None
        result = call_declared(
            self.engine.select_context,
            {
                "request_messages": request_messages,
                "conversation_messages": conversation_messages,
                "incoming_message": incoming_message,
                "budget_tokens": budget_tokens,
                "runtime_settings": self._settings(budget_tokens),
            },
        )
        self.last_select_covers = list(result.covers) if isinstance(result, AssembleResult) else []
        if isinstance(result, AssembleResult):
            return with_system_addition(result.messages, result.system_prompt_addition)
        return result if isinstance(result, list) and result else None

    def on_session_start(self, session_id: str, **kwargs: Any) -> None:
        self._session_id = session_id
        self._ingested = 0
        call_declared(self.engine.on_session_start, {"session_id": session_id, **kwargs})

    def on_turn_complete(
        self, messages: list[Message], usage: dict | None = None, **kwargs: Any
    ) -> None:
        """Feed ``ingest`` the turn's new messages, then let the engine observe the turn."""
        if self._session_id is not None and is_implemented(self.engine, "ingest"):
            start = self._ingested if self._ingested <= len(messages) else 0
            fresh = list(messages[start:])
            if fresh:
                self.engine.ingest(self._session_id, fresh)
            self._ingested = len(messages)
        call_declared(self.engine.on_turn_complete, {"messages": messages, "usage": usage})

    def should_compress_preflight(self, messages: list[Message]) -> bool:
        return bool(self.engine.should_compress_preflight(messages))

    def update_model(
        self,
        model: str,
        context_length: int,
        base_url: str = "",
        api_key: str = "",
        provider: str = "",
        api_mode: str = "",
    ) -> None:
        call_declared(
            self.engine.update_model,
            {
                "model": model,
                "context_length": context_length,
                "base_url": base_url,
                "api_key": api_key,
                "provider": provider,
                "api_mode": api_mode,
            },
        )

    def get_tool_schemas(self) -> list[dict[str, Any]]:
        return self.engine.get_tool_schemas()

    def handle_tool_call(self, name: str, args: dict[str, Any], **kwargs: Any) -> str:
        return self.engine.handle_tool_call(name, args)

    def get_status(self) -> dict[str, Any]:
        return self.engine.get_status()

    def on_session_reset(self) -> None:
        self._ingested = 0
        self.engine.on_session_reset()

    def on_session_end(self, session_id: str, messages: list[Message]) -> None:
        self.engine.on_session_end(session_id, messages)

    def clone_for_agent(self) -> FrameworkEngineAdapter:
        return FrameworkEngineAdapter(
            self.engine.clone_for_agent(),
            capabilities=self.capabilities,
            execution_host=self.execution_host,
        )


def with_system_addition(messages: list[Message], addition: str | None) -> list[Message]:
    """``messages`` with ``addition`` put in front of the system prompt (or as one)."""
    if not addition:
        return list(messages)
    if messages and messages[0].get("role") == "system":
        head = dict(messages[0])
        head["content"] = f"{addition}\n\n{head.get('content') or ''}".rstrip()
        return [head, *messages[1:]]
    return [{"role": "system", "content": addition}, *messages]


def _register_with_real_framework() -> None:
    """Make adapters pass ``isinstance(x, ContextEngine)`` of an installed framework."""
    module = sys.modules.get("agent.context_engine")
    base = getattr(module, "ContextEngine", None)
    if module is None or is_shim(module) or not hasattr(base, "register"):
        return
    if not issubclass(FrameworkEngineAdapter, base):
        base.register(FrameworkEngineAdapter)
