"""LiteLLM: model windows and token counts for the host's budget; a summarizer backend.

``pip install "ctxengine-host[litellm]"``; tested with litellm 1.110.2. Set
``LITELLM_LOCAL_MODEL_COST_MAP=True`` so LiteLLM reads its bundled model map and
never fetches one::

    host = ContextHost("lcm", **litellm_budget("anthropic/claude-sonnet-4-5"))

    [summarizer]
    backend = "litellm"
    model = "anthropic/claude-haiku-4-5"   # any model LiteLLM reaches

``litellm_budget`` gives the host the model's input window from LiteLLM's model
map and a :class:`LiteLLMTokenCounter` that counts with that provider's
tokenizer (as far as LiteLLM knows it: tiktoken for OpenAI models, bundled
tokenizers for some others, an estimate otherwise). See docs/integrations.md.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import litellm

from ..runtime.tokens import TokenCounter
from ..summarizer.errors import SummarizerError
from ..summarizer.openai_backend import build_messages
from ..summarizer.render import render_transcript
from ..summarizer.settings import LiteLLMSettings


def context_window(model: str) -> int | None:
    """The model's input window from LiteLLM's model map, or None when it is not listed."""
    try:
        info = litellm.get_model_info(model)
    except Exception:  # LiteLLM raises for models it does not know
        return None
    for key in ("max_input_tokens", "max_tokens"):
        value = info.get(key)
        if isinstance(value, int) and value > 0:
            return value
    return None


class LiteLLMTokenCounter(TokenCounter):
    """The host's counter (framing, caching) with text counted by LiteLLM for ``model``."""

    def __init__(self, model: str) -> None:
        super().__init__(model)
        self.litellm_model = model
        self.exact = True
        self.estimate_factor = None

    def count_text(self, text: str) -> int:
        if not text:
            return 0
        return int(litellm.token_counter(model=self.litellm_model, text=text))

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "tokenizer": f"litellm ({self.litellm_model})"}


def litellm_budget(model: str, *, context_length: int | None = None) -> dict[str, Any]:
    """``ContextHost`` keyword arguments for ``model``: its window and token counter.

    ``context_length`` overrides the window (a smaller budget than the model's).
    A model LiteLLM does not list needs ``context_length``.
    """
    window = context_length or context_window(model)
    if window is None:
        raise ValueError(
            f"LiteLLM's model map has no window for {model!r}; pass context_length=, or "
            "register the model with litellm.register_model()"
        )
    return {"model": model, "context_length": window, "counter": LiteLLMTokenCounter(model)}


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
        shrink: Callable[[str | list[dict[str, Any]], int, str | None], str] | None = None,
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
        transcript = render_transcript(content)
        if (
            self._shrink
            and self._count_text
            and self._count_text(transcript) > settings.max_input_tokens
        ):
            transcript = self._shrink(content, settings.max_input_tokens, focus_topic)
        asked = target_tokens if level == 0 else max(1, int(target_tokens * 0.6))
        kwargs: dict[str, Any] = {
            "model": settings.model,
            "messages": build_messages(transcript, asked, focus_topic, previous, level),
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
