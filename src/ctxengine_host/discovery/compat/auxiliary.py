"""``agent.auxiliary_client`` for framework plugins run by ctxengine: our summarizer.

Framework engine plugins summarize through the framework's auxiliary LLM client:
hermes-lcm calls ``call_llm(task="compression", messages=[...], max_tokens=...,
temperature=..., model=..., timeout=...)`` and reads
``response.choices[0].message.content``. Under ctxengine those calls go to the
summarizer service of the engine's context (``[summarizer]`` config: the
offline extractive backend by default), never to a provider of the framework:
where the framework is installed, its module's ``call_llm`` and
``async_call_llm`` are replaced by these whenever a plugin directory is loaded.

Only the calls engine plugins make are provided (``call_llm``,
``async_call_llm``, ``extract_content_or_reasoning``); anything else raises
``AttributeError`` naming this module.
"""

from __future__ import annotations

import threading
from types import SimpleNamespace
from typing import Any

#: Tokens asked for when a call gives no ``max_tokens``.
DEFAULT_SUMMARY_TOKENS = 1024

_lock = threading.Lock()
_summarize: Any = None  # EngineContext.summarize of the last plugin constructed


def use_summarizer_of(context: Any) -> None:
    """Route later calls to ``context.summarize`` (an :class:`EngineContext`); a context
    without one (None) goes back to a default service with the default settings."""
    global _summarize
    summarize = getattr(context, "summarize", None)
    with _lock:
        _summarize = summarize if callable(summarize) else None


def _summarizer() -> Any:
    global _summarize
    with _lock:
        if _summarize is None:
            from ...summarizer import SummarizerService

            service = SummarizerService()
            _summarize = lambda content, target_tokens, **kw: service.summarize(  # noqa: E731
                content, target_tokens, kw.get("focus_topic"), kw.get("previous")
            )
        return _summarize


def call_llm(
    task: str | None = None,
    *,
    messages: list[dict[str, Any]] | None = None,
    max_tokens: int | None = None,
    **ignored: Any,
) -> Any:
    """A chat-completion-shaped answer whose content is our summary of ``messages``.

    The prompt's instructions are part of the content summarized; provider,
    model, temperature, timeout and the rest are accepted and ignored.
    """
    content = [m for m in messages or [] if isinstance(m, dict) and m.get("role") != "system"]
    target = int(max_tokens or DEFAULT_SUMMARY_TOKENS)
    result = _summarizer()(content or "", target_tokens=target)
    text = getattr(result, "text", result) or ""
    message = SimpleNamespace(role="assistant", content=text, tool_calls=None, reasoning=None)
    usage = SimpleNamespace(
        prompt_tokens=getattr(result, "input_tokens", 0),
        completion_tokens=getattr(result, "output_tokens", 0),
        total_tokens=getattr(result, "input_tokens", 0) + getattr(result, "output_tokens", 0),
    )
    choice = SimpleNamespace(index=0, message=message, finish_reason="stop")
    return SimpleNamespace(
        id="ctxengine-summary", model="ctxengine-summarizer", choices=[choice], usage=usage
    )


async def async_call_llm(task: str | None = None, **kwargs: Any) -> Any:
    """:func:`call_llm`, awaitable."""
    import asyncio

    return await asyncio.to_thread(call_llm, task, **kwargs)


def extract_content_or_reasoning(response: Any) -> str:
    """The text of a :func:`call_llm` answer."""
    return (response.choices[0].message.content or "").strip()


class PluginLlm:
    """What ``ctx.llm`` offers a plugin under ctxengine: completions by the summarizer."""

    def complete(self, messages: list[dict[str, Any]], **kwargs: Any) -> str:
        return extract_content_or_reasoning(call_llm(messages=messages, **kwargs))


#: Names the shim module exports.
EXPORTS = ("call_llm", "async_call_llm", "extract_content_or_reasoning")
#: The framework module's members replaced by ours where the framework is installed.
ROUTED = ("call_llm", "async_call_llm")
