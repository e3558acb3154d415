"""What several commands need: the effective config and engine contexts for construction.

Imported only by commands that construct engines (doctor, ``engines --check``):
it pulls in pydantic through the config models.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..config import LoadedConfig
from ..contract.context import EngineContext
from ..contract.models import SummaryResult
from ..paths import user_data_dir
from ..tokens import TokenCounter


def counter_for(loaded: LoadedConfig) -> TokenCounter:
    """The token counter for the configured model (gpt-4's encoding when unset)."""
    context = loaded.config.context
    return TokenCounter(context.model or "gpt-4", context.encoding)


def context_factory(loaded: LoadedConfig, counter: TokenCounter) -> Callable[[str], EngineContext]:
    """``make_context`` for :func:`~ctxengine_host.discovery.slot.resolve_engine` outside a host.

    Token counting is real; the summarizer service is created on first use
    (commands construct and check engines; they rarely summarize).
    """

    services: list[Any] = []  # created on first use: the CLI rarely summarizes

    def summarize(content: Any, **kwargs: Any) -> SummaryResult:
        if not services:
            from ..summarizer import SummarizerService

            services.append(SummarizerService(loaded.config.summarizer, counter))
        return services[0].summarize(content, **kwargs)

    def make(name: str) -> EngineContext:
        return EngineContext(
            engine_name=name,
            data_dir=user_data_dir() / "engines" / name,
            count_tokens=counter.count_any,
            summarize=summarize,
        )

    return make
