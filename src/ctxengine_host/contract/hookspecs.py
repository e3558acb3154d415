"""The engine contract as pluggy hook specifications.

One hookspec per contract method, with the contract's method and parameter
names. An engine implements a hook by defining a method of the same name
(it need not decorate it); `ctxengine_host.contract.signatures` checks its parameter
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
        """Record the usage of the last provider call (the budget attributes).

        Called after every provider response with its ``usage`` block.

        Example:
            ```python
            def update_from_response(self, usage):
                apply_usage(self, usage)  # sets last_prompt/completion/total_tokens
            ```
        """

    @hookspec(firstresult=True)
    def should_compress(self, prompt_tokens: int | None = None) -> bool:
        """Say whether compaction should run now.

        ``prompt_tokens`` is the size of the request about to be sent (None: use the
        last recorded usage).

        Example:
            ```python
            def should_compress(self, prompt_tokens=None):
                tokens = self.last_prompt_tokens if prompt_tokens is None else prompt_tokens
                return tokens >= self.threshold_tokens
            ```
        """

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

        The result must be a valid request (tool calls with their results). An engine
        that keeps its history itself returns a ``CompactResult`` without messages.
        ``memory_context`` is the framework's (current ABC): memory-provider text for the
        summary; ctxengine's runtime passes none.

        Example:
            ```python
            def compress(self, messages, current_tokens=None, focus_topic=None):
                head, middle, tail = messages[:2], messages[2:-6], messages[-6:]
                note = {"role": "user", "content": "[summary] " + summarize(middle)}
                return head + [note] + tail
            ```
        """

    @hookspec(firstresult=True)
    def on_session_start(self, session_id: str) -> None:
        """A session was opened (started or resumed).

        Example:
            ```python
            def on_session_start(self, session_id):
                self.conversation = self.store.open(session_id)
            ```
        """

    @hookspec(firstresult=True)
    def bootstrap(
        self, session_id: str, messages: list[dict[str, Any]], runtime_settings: Any
    ) -> Any:
        """Import an existing history, once per engine and session.

        Example:
            ```python
            def bootstrap(self, session_id, messages, runtime_settings):
                imported = self.store.append(session_id, messages)
                return BootstrapResult(bootstrapped=True, imported_messages=imported)
            ```
        """

    @hookspec(firstresult=True)
    def ingest(self, session_id: str, messages: list[dict[str, Any]]) -> Any:
        """New messages were committed to the transcript (each has a ``message_uid``).

        Example:
            ```python
            def ingest(self, session_id, messages):
                self.store.append(session_id, messages)
                return IngestResult(ingested=True)
            ```
        """

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
        """Choose the messages of one request; None or ``[]`` means no change.

        Return a list or an ``AssembleResult`` within ``budget_tokens``; never modify
        the arguments.

        Example:
            ```python
            def select_context(self, request_messages, *, budget_tokens=0, **_):
                return AssembleResult(messages=self.fit(request_messages, budget_tokens))
            ```
        """

    @hookspec(firstresult=True)
    def on_turn_complete(
        self, messages: Sequence[dict[str, Any]], usage: dict[str, Any] | None = None
    ) -> None:
        """Observe a finished turn (the messages of the turn and its usage).

        Example:
            ```python
            def on_turn_complete(self, messages, usage=None):
                self.turns_seen += 1
            ```
        """

    @hookspec(firstresult=True)
    def maintain(self, session_id: str, runtime_settings: Any, transcript: Any) -> Any:
        """Housekeeping after a turn, inline or on a background worker.

        ``transcript`` offers the session's live view (and a safe rewrite).

        Example:
            ```python
            def maintain(self, session_id, runtime_settings, transcript):
                pruned = self.store.vacuum(session_id)
                return MaintenanceResult(changed=bool(pruned))
            ```
        """

    @hookspec(firstresult=True)
    def should_compress_preflight(self, messages: Sequence[dict[str, Any]]) -> bool:
        """A cheap check before the provider call: compact first?

        Example:
            ```python
            def should_compress_preflight(self, messages):
                return len(messages) > self.max_messages
            ```
        """

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
        """The model or its window changed: recompute the threshold.

        Example:
            ```python
            def update_model(self, model, context_length, **_):
                self.context_length = context_length
                self.threshold_tokens = int(context_length * self.threshold_percent)
            ```
        """

    @hookspec(firstresult=True)
    def get_tool_schemas(self) -> list[dict[str, Any]]:
        """Tools the engine offers the agent (OpenAI function-tool schemas).

        Example:
            ```python
            def get_tool_schemas(self):
                return [{"type": "function", "function": {"name": "recall",
                         "description": "Search earlier messages",
                         "parameters": {"type": "object", "properties": {}}}}]
            ```
        """

    @hookspec(firstresult=True)
    def handle_tool_call(self, name: str, args: dict[str, Any]) -> str:
        """Run one engine tool; return a JSON string (an ``error`` key on failure).

        ``args`` come from the model: validate them and answer bad ones with an error.

        Example:
            ```python
            def handle_tool_call(self, name, args):
                if name != "recall":
                    return json.dumps({"error": f"unknown tool {name}"})
                return json.dumps({"hits": self.search(str(args.get("query", "")))})
            ```
        """

    @hookspec(firstresult=True)
    def get_status(self) -> dict[str, Any]:
        """Numbers for status displays and ``ctxengine doctor``.

        Example:
            ```python
            def get_status(self):
                return {**super().get_status(), "stored_messages": self.store.count()}
            ```
        """

    @hookspec(firstresult=True)
    def on_session_reset(self) -> None:
        """The user started over within the session: zero the counters.

        Example:
            ```python
            def on_session_reset(self):
                super().on_session_reset()
                self.notes.clear()
            ```
        """

    @hookspec(firstresult=True)
    def on_session_end(self, session_id: str, messages: list[dict[str, Any]]) -> None:
        """The session ended.

        Example:
            ```python
            def on_session_end(self, session_id, messages):
                self.store.close(session_id)
            ```
        """

    @hookspec(firstresult=True)
    def prepare_subagent_spawn(
        self, parent_session_id: str, child_session_id: str, context_mode: str, ttl_s: float | None
    ) -> Any:
        """A sub-agent is about to start; may return a rollback callable.

        Example:
            ```python
            def prepare_subagent_spawn(self, parent_session_id, child_session_id,
                                       context_mode, ttl_s):
                grant = self.store.grant(parent_session_id, child_session_id, ttl_s)
                return grant.revoke  # called if the spawn fails
            ```
        """

    @hookspec(firstresult=True)
    def on_subagent_ended(self, child_session_id: str, reason: str) -> None:
        """A sub-agent finished (``reason``: completed, failed, ...).

        Example:
            ```python
            def on_subagent_ended(self, child_session_id, reason):
                self.store.revoke_grants(child_session_id)
            ```
        """

    @hookspec(firstresult=True)
    def clone_for_agent(self) -> Any:
        """A fresh instance for another agent (never share mutable state).

        Example:
            ```python
            def clone_for_agent(self):
                return type(self)(config=self.config, context=self.context)
            ```
        """

    @hookspec(firstresult=True)
    def dispose(self) -> None:
        """Release resources; the host is closing.

        Example:
            ```python
            def dispose(self):
                self.connection.close()
            ```
        """


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

        Example:
            ```python
            @hookimpl
            def ctxengine_summarize(content, target_tokens, focus_topic, previous, level):
                if not isinstance(content, str):
                    return None  # leave message lists to the configured summarizer
                return my_model.summarize(content, max_tokens=target_tokens)
            ```
        """


#: Contract method names, in lifecycle order.
CONTRACT_METHODS: tuple[str, ...] = tuple(
    name for name in vars(ContractSpec) if not name.startswith("_")
)

#: Methods every engine must implement.
REQUIRED_METHODS: frozenset[str] = frozenset(
    {"update_from_response", "should_compress", "compress"}
)
