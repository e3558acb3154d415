"""What a session's parts see of the session and the host: narrow protocols, not the classes.

Assembly, compaction, maintenance, sub-agents and the transcript view are parts of
``Session``. They are typed against these protocols instead of importing
``runtime.session`` (or ``runtime.host``) back, so the session and its parts form no
import cycle, and each part says exactly what it reads. ``Session`` and ``ContextHost``
satisfy them structurally; mypy checks it where the session builds each part.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, TypeVar

if TYPE_CHECKING:
    from ..contract.models import RuntimeSettings
    from ..stores.transcript import TranscriptStore
    from ..tokens import TokenCounter
    from .isolation import EngineGuard
    from .live import LiveView
    from .turns import TurnStats

Message = dict[str, Any]
Child_co = TypeVar("Child_co", covariant=True)


class HostServices(Protocol):
    """The host's services a session's parts use."""

    @property
    def counter(self) -> TokenCounter: ...
    @property
    def strict_alternation(self) -> bool: ...
    @property
    def store(self) -> TranscriptStore: ...
    @property
    def summarizer(self) -> object: ...

    def default_compaction(
        self, messages: list[Message], budget_tokens: int
    ) -> list[Message] | None:
        """One request compacted by a fresh default engine (None if it fails)."""


class SessionState(Protocol):
    """A session as its request assembler, compactor, maintenance and views read it."""

    #: Rows written for the session so far (the compactor adds the rows it writes).
    stored_count: int

    @property
    def session_id(self) -> str: ...
    @property
    def host(self) -> HostServices: ...
    @property
    def guard(self) -> EngineGuard: ...
    @property
    def live(self) -> LiveView: ...
    @property
    def turn_stats(self) -> TurnStats: ...
    @property
    def system_prompt(self) -> str | None: ...
    @property
    def head(self) -> list[Message]: ...
    @property
    def head_tokens(self) -> int: ...
    @property
    def tools(self) -> list[dict[str, Any]]: ...
    @property
    def tool_tokens(self) -> int: ...
    @property
    def budget_tokens(self) -> int: ...
    @property
    def shape(self) -> str | None: ...

    def engine_call(self, method: str, **kwargs: Any) -> Any:
        """Call the engine through the guard, timed as the turn's engine time."""

    def runtime_settings(self) -> RuntimeSettings:
        """What the engine is told about this run."""

    def check_model_result(self, method: str, result: Any) -> None:
        """Log a ``bootstrap``/``ingest``/``maintain`` result of an unexpected type."""

    def messages(self) -> list[Message]:
        """Copies of the live view."""


class ChildOpener(Protocol[Child_co]):
    """The host's side of opening a sub-agent session."""

    def _open(
        self,
        session_id: str | None,
        *,
        system_prompt: str | None,
        tools: list[dict[str, Any]] | None,
        parent: Any = None,
        fork_from: list[Message] | None = None,
    ) -> Child_co: ...


class SubagentParent(Protocol[Child_co]):
    """A session as :mod:`~ctxengine_host.runtime.subagents` reads it when it spawns a child
    (``Child_co``: the type of session its host opens)."""

    @property
    def session_id(self) -> str: ...
    @property
    def host(self) -> ChildOpener[Child_co]: ...
    @property
    def guard(self) -> EngineGuard: ...
    @property
    def live(self) -> LiveView: ...
    @property
    def system_prompt(self) -> str | None: ...
    @property
    def caller_tools(self) -> list[dict[str, Any]]: ...
    @property
    def ended(self) -> bool: ...

    def engine_call(self, method: str, **kwargs: Any) -> Any:
        """Call the engine through the guard."""
