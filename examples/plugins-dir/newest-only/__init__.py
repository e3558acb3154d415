"""Example directory engine ``newest-only``, registered through ``register(ctx)``.

It keeps the system prompt and the newest messages (tool groups intact) under
60% of its threshold. ``ctx.config`` is the ``[engines.newest-only]`` block (a
dict: this engine has no ``config_model``) and ``ctx.context`` the host's
:class:`~ctxengine_host.EngineContext`.
"""

from __future__ import annotations

from typing import Any

from ctxengine_host import ContextEngine
from ctxengine_host.discovery.fallback import keep_newest_that_fit


class NewestOnlyEngine(ContextEngine):
    name = "newest-only"
    version = "0.1.0"
    display_name = "Newest messages only"

    def __init__(self, config: dict[str, Any] | None = None, context: Any = None) -> None:
        super().__init__(config=config, context=context)
        self.keep_ratio = float((config or {}).get("keep_ratio", 0.6))

    def update_from_response(self, usage: dict[str, Any]) -> None:
        self.last_prompt_tokens = int(usage.get("prompt_tokens") or 0)
        self.last_completion_tokens = int(usage.get("completion_tokens") or 0)
        self.last_total_tokens = self.last_prompt_tokens + self.last_completion_tokens

    def should_compress(self, prompt_tokens: int | None = None) -> bool:
        tokens = self.last_prompt_tokens if prompt_tokens is None else prompt_tokens
        return bool(self.threshold_tokens) and tokens >= self.threshold_tokens

    def compress(
        self,
        messages: list[dict[str, Any]],
        current_tokens: int | None = None,
        focus_topic: str | None = None,
    ) -> list[dict[str, Any]]:
        budget = int(self.threshold_tokens * self.keep_ratio) or 2048
        kept = keep_newest_that_fit(messages, budget, self._count)
        self.compression_count += len(kept) < len(messages)
        return kept

    def _count(self, messages: list[dict[str, Any]]) -> int:
        if self.context is not None:
            return self.context.count_tokens(messages)
        return sum(len(str(m.get("content") or "")) // 4 + 4 for m in messages)


def register(ctx: Any) -> None:
    ctx.register_context_engine(NewestOnlyEngine(config=ctx.config, context=ctx.context))
