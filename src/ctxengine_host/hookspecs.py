"""The engine contract as pluggy hook specifications.

One hookspec per contract method, with the contract's method and parameter
names. An engine implements a hook by defining a method of the same name
(it need not decorate it); `ctxengine_host.signatures` checks its parameter
names against these specs and passes only the parameters it declares.

Plugins in the ``ctxengine.plugins`` entry point group may observe these hooks
with ``wrapper=True`` hook implementations, and may provide a summarizer
through :func:`ctxengine_summarize`. They never own context.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pluggy

PROJECT_NAME = "ctxengine"

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)


class ContractSpec:
    """The contract methods, in lifecycle order."""

    @hookspec(firstresult=True)
    def update_from_response(self, usage: dict[str, Any]) -> None:
        """Record the usage of the last provider call."""

    @hookspec(firstresult=True)
    def should_compress(self, prompt_tokens: int | None = None) -> bool:
        """Say whether compaction should run now."""

    @hookspec(firstresult=True)
    def compress(
        self,
        messages: list[dict[str, Any]],
        current_tokens: int | None = None,
        focus_topic: str | None = None,
        force: bool = False,
        runtime_settings: Any = None,
        deadline: float | None = None,
        memory_context: str = "",
    ) -> Any:
        """Compact the history; return a message list or a ``CompactResult``.

        ``memory_context`` is the framework's (current ABC): memory-provider text
        for the summary; ctxengine's runtime passes none."""

    @hookspec(firstresult=True)
    def on_session_start(self, session_id: str) -> None:
        """A session was opened (started or resumed)."""

    @hookspec(firstresult=True)
    def bootstrap(self, session_id: str, messages: list[dict[str, Any]], runtime_settings: Any):
        """Import an existing history, once per engine and session."""

    @hookspec(firstresult=True)
    def ingest(self, session_id: str, messages: list[dict[str, Any]]) -> Any:
        """New messages were committed to the transcript."""

    @hookspec(firstresult=True)
    def select_context(
        self,
        request_messages: list[dict[str, Any]],
        # Engines may declare the following keyword-only (the base class does);
        # pluggy's specs cannot, which does not matter: arguments go by name.
        conversation_messages: Sequence[dict[str, Any]] | None = None,
        incoming_message: dict[str, Any] | None = None,
        budget_tokens: int = 0,
        runtime_settings: Any = None,
    ) -> Any:
        """Choose the messages of one request; None or [] means no change."""

    @hookspec(firstresult=True)
    def on_turn_complete(
        self, messages: Sequence[dict[str, Any]], usage: dict | None = None
    ) -> None:
        """Observe a finished turn."""

    @hookspec(firstresult=True)
    def maintain(self, session_id: str, runtime_settings: Any, transcript: Any) -> Any:
        """Housekeeping after a turn, inline or on a background worker."""

    @hookspec(firstresult=True)
    def should_compress_preflight(self, messages: Sequence[dict[str, Any]]) -> bool:
        """A cheap check before the provider call."""

    @hookspec(firstresult=True)
    def update_model(
        self,
        model: str,
        context_length: int,
        base_url: str = "",
        api_key: str = "",
        provider: str = "",
        api_mode: str = "",
    ) -> None:
        """The model or its window changed."""

    @hookspec(firstresult=True)
    def get_tool_schemas(self) -> list[dict[str, Any]]:
        """Tools the engine offers the agent."""

    @hookspec(firstresult=True)
    def handle_tool_call(self, name: str, args: dict[str, Any]) -> str:
        """Run one engine tool; return a JSON string."""

    @hookspec(firstresult=True)
    def get_status(self) -> dict[str, Any]:
        """Numbers for status displays and ``ctxengine doctor``."""

    @hookspec(firstresult=True)
    def on_session_reset(self) -> None:
        """The user started over within the session."""

    @hookspec(firstresult=True)
    def on_session_end(self, session_id: str, messages: list[dict[str, Any]]) -> None:
        """The session ended."""

    @hookspec(firstresult=True)
    def prepare_subagent_spawn(
        self, parent_session_id: str, child_session_id: str, context_mode: str, ttl_s: float | None
    ) -> Any:
        """A sub-agent is about to start; may return a rollback callable."""

    @hookspec(firstresult=True)
    def on_subagent_ended(self, child_session_id: str, reason: str) -> None:
        """A sub-agent finished."""

    @hookspec(firstresult=True)
    def clone_for_agent(self) -> Any:
        """A fresh instance for another agent."""

    @hookspec(firstresult=True)
    def dispose(self) -> None:
        """Release resources; the host is closing."""


class PluginSpec:
    """Hooks for plugins in the ``ctxengine.plugins`` group (not engines)."""

    @hookspec(firstresult=True)
    def ctxengine_summarize(
        self,
        content: Any,
        target_tokens: int,
        focus_topic: str | None,
        previous: str | None,
        level: int,
    ) -> str | None:
        """Summarize ``content`` (text or messages) to about ``target_tokens``.

        Return None to let the next backend (finally the configured one) answer.
        ``level`` is the escalation level: 0 normal, 1 aggressive.
        """


#: Contract method names, in lifecycle order.
CONTRACT_METHODS: tuple[str, ...] = tuple(
    name for name in vars(ContractSpec) if not name.startswith("_")
)

#: Methods every engine must implement.
REQUIRED_METHODS: frozenset[str] = frozenset(
    {"update_from_response", "should_compress", "compress"}
)
