"""What every framework adapter does, in chat-message terms: mirror, commit, assemble.

Agent frameworks hand their hook the whole history before each model call.
:class:`HistoryBridge` finds what is new since the previous call (the longest
common prefix with what the framework held then), commits it to the session
(user messages and tool results through ``add_messages``, the model's answers
through ``record_response``, so compaction runs as in a hand-written loop),
then returns the request the selected engine assembles. The adapters only
convert their framework's message types to and from OpenAI chat dicts.

Guarantees: messages are in the store before the engine sees them; an engine
that fails falls back to the default engine inside the host; anything else that
goes wrong (even the default engine failing) is logged and the framework's own
history is used for that call, so the agent never breaks.
"""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass
from typing import Any

from .. import ProviderRequest, Session, TurnReport  # the public names
from ..contract.usage import UsageError
from ..runtime.validity import ValidityError

log = logging.getLogger("ctxengine.integrations")

Message = dict[str, Any]


@dataclass(frozen=True)
class EngineTool:
    """One tool the engine offers, in the terms every framework needs."""

    name: str
    description: str
    parameters: dict[str, Any]


class HistoryBridge:
    """Keeps one framework conversation and one :class:`Session` in step."""

    def __init__(self, session: Any) -> None:
        # An AsyncSession wraps the sync Session: the bridge drives the sync one on that host's
        # executor (serialized with the session's other calls); a Session, on a worker thread.
        self.session: Session = getattr(session, "session", session)
        self._offload = getattr(session, "call", None) or asyncio.to_thread
        self._known: list[Message] = []
        self._turn_open = False
        #: The requests assembled so far (their ``compactions`` say what the engine did).
        self.requests: list[ProviderRequest] = []
        #: The reports of the turns finished so far (their ``compactions`` too).
        self.reports: list[TurnReport] = []
        #: Messages of the framework's history the store refused as invalid (logged).
        self.rejected = 0
        #: Calls where the framework's own history was used because something failed.
        self.fallbacks = 0

    # ------------------------------------------------------------------ history

    def assemble(self, history: list[Message]) -> list[Message] | None:
        """Commit what is new in ``history``; the engine's request messages, or None on failure.

        The framework's history is remembered as is: right for request-only hooks.
        A hook whose output replaces the framework's history calls :meth:`remember`.
        """
        try:
            self.commit(history)
        except Exception:
            log.exception("session %s: storing the new messages failed", self.session.session_id)
            self.fallbacks += 1
            return None
        try:
            request = self.session.build_request()
        except Exception:
            log.exception(
                "session %s: the engine could not assemble the request; the framework's "
                "history is used unchanged",
                self.session.session_id,
            )
            self.fallbacks += 1
            return None
        self.requests.append(request)
        return [dict(m) for m in request.messages]

    async def aassemble(self, history: list[Message]) -> list[Message] | None:
        """:meth:`assemble` on a thread, so that the event loop is never blocked."""
        return await self._offload(self.assemble, history)

    def commit(self, history: list[Message]) -> list[Message]:
        """Store the messages of ``history`` not seen before; returns them.

        Leading system messages are the framework's system prompt, sent with every
        call: they become the session's system prompt, not conversation messages.
        """
        history = self._take_system_prompt(history)
        new = self._new_part(history)
        self._known = list(history)
        batch: list[Message] = []
        for message in new:
            if message.get("role") == "assistant":
                self._flush(batch)
                self._store(self.session.record_response, [message], message, None)
                self._turn_open = True
            else:
                if message.get("role") == "user" and self._turn_open:
                    self._flush(batch)
                    self.finish_turn()
                batch.append(message)
        self._flush(batch)
        return new

    def remember(self, history: list[Message]) -> None:
        """The framework's history is now ``history`` (the hook's output replaced it)."""
        self._known = _without_system_head(history)

    def forget(self) -> None:
        """The framework starts from an empty history (a new run from scratch)."""
        self._known = []

    def finish_turn(self) -> None:
        """End the turn in progress (``on_turn_complete`` → ``maintain``)."""
        if self._turn_open:
            self._turn_open = False
            self.reports.append(self.session.finish_turn())

    def _flush(self, batch: list[Message]) -> None:
        if batch:
            self._store(self.session.add_messages, batch, list(batch), repair_input=True)
            self._turn_open = True
            batch.clear()

    def _store(self, step: Any, messages: list[Message], *args: Any, **kwargs: Any) -> None:
        """One store step; messages the store refuses as invalid are logged and counted, and
        the conversation goes on (the framework still holds them)."""
        try:
            step(*args, **kwargs)
        except (ValidityError, UsageError) as exc:
            self.rejected += len(messages)
            log.error(
                "session %s: %d message(s) from the framework not stored: %s",
                self.session.session_id,
                len(messages),
                exc,
            )

    def _take_system_prompt(self, history: list[Message]) -> list[Message]:
        rest = _without_system_head(history)
        head = history[: len(history) - len(rest)]
        if head:
            prompt = "\n\n".join(str(m.get("content") or "") for m in head)
            if prompt != self.session.system_prompt:
                self.session.set_system_prompt(prompt)
        return rest

    def _new_part(self, history: list[Message]) -> list[Message]:
        known = self._known
        common = 0
        for seen, message in zip(known, history, strict=False):
            if seen != message:
                break
            common += 1
        if common < len(known):
            log.warning(
                "session %s: the framework's history changed at position %d of %d; storing "
                "from there",
                self.session.session_id,
                common,
                len(known),
            )
        return history[common:]

    # ------------------------------------------------------------------ tools

    def engine_tools(self) -> list[EngineTool]:
        """The tools the engine offers (empty for an engine without tools)."""
        session = self.session
        own = session.tools[len(session.caller_tools) :]
        tools = []
        for schema in own:
            function = schema.get("function", schema)
            tools.append(
                EngineTool(
                    name=function["name"],
                    description=function.get("description") or "",
                    parameters=function.get("parameters") or {"type": "object", "properties": {}},
                )
            )
        return tools

    def call_tool(self, name: str, args: dict[str, Any] | str | None) -> str:
        """Run an engine tool; a JSON string whatever happens."""
        try:
            return self.session.call_engine_tool(name, args)
        except Exception as exc:
            log.exception("session %s: engine tool %s failed", self.session.session_id, name)
            return json.dumps({"error": f"engine tool {name} failed: {exc}"})

    async def acall_tool(self, name: str, args: dict[str, Any] | str | None) -> str:
        return await self._offload(self.call_tool, name, args)

    async def offload(self, fn: Any, *args: Any) -> Any:
        """``fn(*args)`` off the event loop, as the bridge runs its own session work."""
        return await self._offload(fn, *args)


def _without_system_head(history: list[Message]) -> list[Message]:
    start = 0
    while start < len(history) and history[start].get("role") in ("system", "developer"):
        start += 1
    return list(history[start:])
