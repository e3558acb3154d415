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

from typing import Any

import litellm

from ..summarizer.litellm_backend import LiteLLMBackend as LiteLLMBackend  # its old place
from ..tokens import TokenCounter


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
