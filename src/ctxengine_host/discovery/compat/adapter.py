"""Any ctxengine engine, seen through the framework ABC's method set.

A framework host calls ``update_from_response``, ``should_compress``,
``compress(messages, current_tokens, focus_topic, force, memory_context)``
returning a list, ``select_context`` returning a list or None,
``on_turn_complete``, ``handle_tool_call(..., messages=...)``, and reads the
budget attributes directly. It offers fewer host capabilities than our
runtime (no bootstrap, maintain, summarizer service or sub-agent hooks), so an
engine whose ``host_requirements`` need more is refused at wrap time.
Our richer results are folded into what that host understands:
``CompactResult`` and ``AssembleResult`` become lists, and a
``system_prompt_addition`` goes in front of the request's system message
(once: a request that has it already is left alone) but never into the
history ``compress`` hands back, so the host's system prompt never grows.
The host keeps the history without message uids; before any method that reads
history, ``ingest`` is fed what the host holds that the engine has not seen
(:class:`~ctxengine_host.discovery.compat.host_view.HostView`), so no message is lost
and none is stored twice.
The ``covers`` of the last selection are kept in ``last_select_covers`` (the live
messages the returned list represents without sending them).
"""

from __future__ import annotations

import sys
from typing import Any

from ...contract.messages import leading_system
from ...contract.models import AssembleResult, CompactResult, RuntimeSettings
from ...contract.signatures import call_declared, is_implemented
from ..validation import host_requirement_problems
from .host_view import HostView, fingerprint
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
        self._view = HostView()
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
        force: bool = False,
        memory_context: str = "",
    ) -> list[Message]:
        """The compacted list; an engine that keeps its own history is asked for its view."""
        self._ingest(messages)
        result = call_declared(
            self.engine.compress,
            {
                "messages": messages,
                "current_tokens": current_tokens,
                "focus_topic": focus_topic,
                "force": force,
                "memory_context": memory_context,
                "runtime_settings": self._settings(),
            },
        )
        if isinstance(result, CompactResult):
            result = (
                result.messages
                if result.messages is not None
                else (self._engine_view(messages) if result.compacted else None)
            )
        if not isinstance(result, list) or not result:
            return messages
        self._view.returned(result, messages)
        return result

    def _engine_view(self, messages: list[Message]) -> list[Message] | None:
        """The engine's view as a history for the host: no system-prompt addition, no uids."""
        if not is_implemented(self.engine, "select_context"):
            return None
        budget = self._conversation_budget(messages, self.engine.threshold_tokens)
        view = call_declared(
            self.engine.select_context,
            {
                "request_messages": messages,
                "budget_tokens": budget,
                "runtime_settings": self._settings(budget),
            },
        )
        if isinstance(view, AssembleResult):
            view = view.messages
        if not isinstance(view, list) or not view:
            return None
        return [{k: v for k, v in m.items() if k != "message_uid"} for m in view]

    def _conversation_budget(self, request_messages: list[Message], budget: int) -> int:
        """A framework's ``budget`` as the contract reads one. The framework's covers the
        whole request; the contract's is the conversation's, the system prompt already off
        it (docs/runtime.md), so the request's leading system messages come off it."""
        count = getattr(getattr(self.engine, "context", None), "count_tokens", None)
        head = leading_system(request_messages or ())
        if not budget or budget <= 0 or not head or not callable(count):
            return budget
        return max(1, budget - int(count(head)))

    def _ingest(self, messages: list[Message] | None) -> None:
        """Store what the host holds that the engine has not seen (before any history read)."""
        if not messages or self._session_id is None or not is_implemented(self.engine, "ingest"):
            return
        fresh = self._view.take_new(messages)
        if fresh:
            self.engine.ingest(self._session_id, fresh)

    # Optional methods, in the framework's shapes.

    def select_context(
        self,
        request_messages: list[Message],
        *,
        conversation_messages: list[Message] | None = None,
        incoming_message: Message | None = None,
        budget_tokens: int = 0,
    ) -> list[Message] | None:
        history = list(conversation_messages or request_messages)
        if incoming_message is not None and (
            not history or fingerprint(history[-1]) != fingerprint(incoming_message)
        ):
            history.append(incoming_message)
        self._ingest(history)
        if not is_implemented(self.engine, "select_context"):
            return None
        budget = self._conversation_budget(request_messages, budget_tokens)
        result = call_declared(
            self.engine.select_context,
            {
                "request_messages": request_messages,
                "conversation_messages": conversation_messages,
                "incoming_message": incoming_message,
                "budget_tokens": budget,
                "runtime_settings": self._settings(budget),
            },
        )
        self.last_select_covers = list(result.covers) if isinstance(result, AssembleResult) else []
        if isinstance(result, AssembleResult):
            result = with_system_addition(result.messages, result.system_prompt_addition)
        if not isinstance(result, list) or not result:
            return None
        return [{k: v for k, v in m.items() if k != "message_uid"} for m in result]

    def on_session_start(self, session_id: str, **kwargs: Any) -> None:
        """A new session; the framework's compaction boundary (``boundary_reason="compression"``,
        same history, maybe a new session id) is not one: the engine's session goes on."""
        if kwargs.get("boundary_reason") == "compression" and self._session_id is not None:
            return
        if session_id != self._session_id:
            self._view.reset(session_id)
        self._session_id = session_id
        call_declared(self.engine.on_session_start, {"session_id": session_id, **kwargs})

    def on_turn_complete(
        self, messages: list[Message], usage: dict | None = None, **kwargs: Any
    ) -> None:
        """Feed ``ingest`` what the turn added, then let the engine observe the turn."""
        self._ingest(messages)
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
        """The engine's answer; the live ``messages`` a host passes are ingested first, so a
        search sees the current turn."""
        self._ingest(kwargs.get("messages"))
        return self.engine.handle_tool_call(name, args)

    def get_status(self) -> dict[str, Any]:
        return self.engine.get_status()

    def on_session_reset(self) -> None:
        self._view.reset(self._session_id or "default")
        self.engine.on_session_reset()

    def on_session_end(self, session_id: str, messages: list[Message]) -> None:
        self._ingest(messages)  # the released framework calls no per-turn hook
        self.engine.on_session_end(session_id, messages)

    def clone_for_agent(self) -> FrameworkEngineAdapter:
        return FrameworkEngineAdapter(
            self.engine.clone_for_agent(),
            capabilities=self.capabilities,
            execution_host=self.execution_host,
        )

    def __deepcopy__(self, memo: dict[int, Any]) -> FrameworkEngineAdapter:
        """The released framework deep-copies the registered engine per agent: a clone."""
        return self.clone_for_agent()

    # Members of the framework's current ABC, answered by the engine or the ABC's default.

    @property
    def protect_first_n(self) -> int:
        return int(getattr(self.engine, "protect_first_n", 3))

    @property
    def protect_last_n(self) -> int:
        return int(getattr(self.engine, "protect_last_n", 6))

    @property
    def emit_automatic_compaction_status(self) -> bool:
        return bool(getattr(self.engine, "emit_automatic_compaction_status", True))

    def should_compress_info(self, prompt_tokens: int | None = None) -> tuple[bool, str | None]:
        return self.should_compress(prompt_tokens), None

    def prune_tool_results_only(
        self, messages: list[Message], current_tokens: int | None = None
    ) -> tuple[list[Message], int]:
        return messages, 0

    def cache_plan(self, messages: list[Message], tools: list[dict], **kwargs: Any) -> Any:
        return None

    def pending_compression_operation(self, messages: list[Message]) -> str | None:
        return None

    def should_defer_preflight_to_real_usage(self, rough_tokens: int) -> bool:
        return False

    def get_automatic_compaction_status_message(
        self, *, phase: str, default_message: str, **context: Any
    ) -> str | None:
        return default_message if self.emit_automatic_compaction_status else None

    def has_content_to_compress(self, messages: list[Message]) -> bool:
        return bool(messages)


def with_system_addition(messages: list[Message], addition: str | None) -> list[Message]:
    """``messages`` with ``addition`` put in front of the system prompt (or as one), once."""
    if not addition:
        return list(messages)
    if messages and messages[0].get("role") == "system":
        if addition in str(messages[0].get("content") or ""):
            return list(messages)  # already there: a system prompt never grows
        head = dict(messages[0])
        head["content"] = f"{addition}\n\n{head.get('content') or ''}".rstrip()
        return [head, *messages[1:]]
    return [{"role": "system", "content": addition}, *messages]


def _register_with_real_framework() -> None:
    """Make adapters pass ``isinstance(x, ContextEngine)`` of an installed framework."""
    module = sys.modules.get("agent.context_engine")
    base = getattr(module, "ContextEngine", None)
    if module is None or base is None or is_shim(module) or not hasattr(base, "register"):
        return
    if not issubclass(FrameworkEngineAdapter, base):
        base.register(FrameworkEngineAdapter)
