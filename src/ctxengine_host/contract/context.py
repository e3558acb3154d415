"""``EngineContext``: the services the host offers an engine at construction."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .models import SummaryResult

SummarizeFn = Callable[..., SummaryResult]


class EngineContext:
    """Summarizer, token counter, a private data directory and a logger.

    One context is shared by an engine prototype and all its clones: copying an
    engine never copies the services.
    """

    def __init__(
        self,
        *,
        engine_name: str,
        data_dir: Path,
        count_tokens: Callable[[Any], int],
        summarize: SummarizeFn,
        logger: logging.Logger | None = None,
        store_id: str | None = None,
        transcript_holds: Callable[[str, str], bool] | None = None,
    ) -> None:
        self.engine_name = engine_name
        self.data_dir = Path(data_dir)
        #: The persisted identity of the host's transcript store (None: no host store). An
        #: engine keeping its own history keys it by this, so two applications sharing an
        #: engine database never share a conversation (docs/reliability.md).
        self.store_id = store_id
        #: ``transcript_holds(session_id, message_uid)``: whether the host's transcript of
        #: the session has that message; lets an engine check that its stored history is
        #: the one the host serves before using it (None: cannot be checked).
        self.transcript_holds = transcript_holds
        self.logger = logger or logging.getLogger(f"ctxengine.engine.{engine_name}")
        self._count_tokens = count_tokens
        self._summarize = summarize

    def bind_transcript_store(
        self, store_id: str, transcript_holds: Callable[[str, str], bool]
    ) -> None:
        """Attach the host's store identity (for a context built without a host)."""
        self.store_id = store_id
        self.transcript_holds = transcript_holds

    def count_tokens(self, text_or_messages: str | list[dict[str, Any]] | dict[str, Any]) -> int:
        """Tokens in a text, one message, or a message list (request framing included)."""
        return self._count_tokens(text_or_messages)

    def summarize(
        self,
        content: str | list[dict[str, Any]],
        target_tokens: int,
        focus_topic: str | None = None,
        previous: str | None = None,
    ) -> SummaryResult:
        """Summarize text or messages to about ``target_tokens``, escalating as needed."""
        return self._summarize(
            content, target_tokens=target_tokens, focus_topic=focus_topic, previous=previous
        )

    def __deepcopy__(self, memo: dict[int, Any]) -> EngineContext:
        return self

    def __copy__(self) -> EngineContext:
        return self
