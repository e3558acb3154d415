"""The ``litellm`` summarizer backend: summaries from ``litellm.completion``.

Imported only when ``[summarizer] backend = "litellm"`` (it needs the ``litellm`` extra);
``integrations.litellm`` re-exports it next to the LiteLLM token counter.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import litellm

from .errors import SummarizerError
from .prompt import Shrink, summary_messages
from .settings import LiteLLMSettings


class LiteLLMBackend:
    """``[summarizer] backend = "litellm"``: summaries from ``litellm.completion``.

    LiteLLM retries transient failures itself (``max_retries``); whatever still
    fails is a :class:`SummarizerError`, so the compaction is aborted and the
    transcript kept.
    """

    name = "litellm"

    def __init__(
        self,
        settings: LiteLLMSettings,
        shrink: Shrink | None = None,
        count_text: Callable[[str], int] | None = None,
    ) -> None:
        self.settings = settings
        self._shrink = shrink
        self._count_text = count_text

    def summarize(
        self,
        content: str | list[dict[str, Any]],
        target_tokens: int,
        focus_topic: str | None = None,
        previous: str | None = None,
        level: int = 0,
    ) -> str:
        settings = self.settings
        messages = summary_messages(
            content, target_tokens, focus_topic, previous, level,
            max_input_tokens=settings.max_input_tokens,
            shrink=self._shrink, count_text=self._count_text,
        )  # fmt: skip
        kwargs: dict[str, Any] = {
            "model": settings.model,
            "messages": messages,
            "temperature": settings.temperature,
            "max_tokens": max(16, target_tokens),
            "timeout": settings.timeout_seconds,
            "num_retries": settings.max_retries,
        }
        if settings.api_base:
            kwargs["api_base"] = settings.api_base
        if settings.api_key_env:
            key = os.environ.get(settings.api_key_env)
            if not key:
                raise SummarizerError(
                    f"the LiteLLM summarizer needs an API key in ${settings.api_key_env}; set "
                    "it, or change [summarizer] api_key_env"
                )
            kwargs["api_key"] = key
        try:
            response = litellm.completion(**kwargs)
        except Exception as exc:
            raise SummarizerError(
                f"litellm.completion({settings.model!r}) failed: {type(exc).__name__}: {exc}"
            ) from exc
        try:
            text = response.choices[0].message.content
        except (AttributeError, IndexError) as exc:
            raise SummarizerError(f"LiteLLM returned no message for {settings.model!r}") from exc
        if not isinstance(text, str) or not text.strip():
            raise SummarizerError(f"LiteLLM returned an empty summary for {settings.model!r}")
        return text.strip()
