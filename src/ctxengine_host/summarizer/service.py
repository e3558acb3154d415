"""``SummarizerService``: one summarizer for every engine, with three-level escalation.

Level 0 asks the backend for a normal summary. When that summary is not
smaller than its input, or is over the target, level 1 asks again
aggressively. When that still fails, level 2 truncates deterministically and
always fits. A plugin's ``ctxengine_summarize`` hook (firstresult) answers
before the configured backend when it returns text.

The service is shared by all engines and threads: counters sit behind a lock,
and :meth:`recording` collects the results produced on the calling thread, so
the runtime can report the levels used by one compaction.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator
from typing import Any, Protocol

import pluggy

from ..config import ConfigError
from ..contract.messages import well_formed_text
from ..contract.models import SummaryResult
from ..tokens import TokenCounter
from .errors import SummarizerError
from .extractive import ExtractiveBackend
from .render import has_transcript, render_transcript
from .settings import LiteLLMSettings, OpenAISettings, parse_backend_settings
from .truncate import truncate_to_tokens

log = logging.getLogger("ctxengine.summarizer")


class Backend(Protocol):
    name: str

    def summarize(
        self,
        content: str | list[dict[str, Any]],
        target_tokens: int,
        focus_topic: str | None = None,
        previous: str | None = None,
        level: int = 0,
    ) -> str: ...


class SummarizerService:
    """Summaries for engines (``EngineContext.summarize`` calls :meth:`summarize`)."""

    def __init__(
        self,
        settings: Any = None,
        counter: TokenCounter | None = None,
        plugin_manager: pluggy.PluginManager | None = None,
    ) -> None:
        self.settings = parse_backend_settings(settings)
        self.counter = counter or TokenCounter()
        self.plugin_manager = plugin_manager
        self.extractive = ExtractiveBackend(self.counter.count_text)
        self.backend: Backend = self._make_backend()
        self._lock = threading.Lock()
        self._local = threading.local()
        self._stats = _empty_stats()

    def _make_backend(self) -> Backend:
        if isinstance(self.settings, LiteLLMSettings):
            try:
                from .litellm_backend import LiteLLMBackend
            except ImportError as exc:
                raise ConfigError(
                    f"[summarizer] backend 'litellm' needs LiteLLM ({exc}); install it with "
                    "pip install 'ctxengine-host[litellm]', or choose another backend"
                ) from exc

            return LiteLLMBackend(
                self.settings,
                shrink=lambda content, limit, focus: self.extractive.summarize(
                    content, limit, focus
                ),
                count_text=self.counter.count_text,
            )
        if isinstance(self.settings, OpenAISettings):
            # Imported here: its HTTP client loads ssl and http.client (~10 MiB resident),
            # which a host summarizing offline never needs.
            from .openai_backend import OpenAIBackend

            return OpenAIBackend(
                self.settings,
                shrink=lambda content, limit, focus: self.extractive.summarize(
                    content, limit, focus
                ),
                count_text=self.counter.count_text,
            )
        return self.extractive

    @property
    def backend_name(self) -> str:
        return self.backend.name

    @property
    def stats(self) -> dict[str, int]:
        """Counts since start: calls, per level (``level_0``…``level_2``), errors, tokens."""
        with self._lock:
            return dict(self._stats)

    def reset_stats(self) -> None:
        with self._lock:
            self._stats = _empty_stats()

    @contextlib.contextmanager
    def recording(self) -> Iterator[list[SummaryResult]]:
        """Collect the results of the summaries made on this thread inside the block."""
        stack = self._recorders()
        results: list[SummaryResult] = []
        stack.append(results)
        try:
            yield results
        finally:
            stack.remove(results)

    def _recorders(self) -> list[list[SummaryResult]]:
        if not hasattr(self._local, "stack"):
            self._local.stack = []
        return self._local.stack

    def summarize(
        self,
        content: str | list[dict[str, Any]],
        target_tokens: int,
        focus_topic: str | None = None,
        previous: str | None = None,
    ) -> SummaryResult:
        """Summarize ``content`` (merging ``previous``) to at most ``target_tokens``.

        Raises :class:`SummarizerError` when the backend fails for good.
        """
        target = max(0, int(target_tokens))
        previous = previous or None
        if not previous and not has_transcript(content):
            return SummaryResult(text="", level=0, backend=self.backend_name)
        input_tokens = self._input_tokens(content, previous)
        try:
            result = self._escalate(content, target, focus_topic, previous, input_tokens)
        except SummarizerError:
            self._count(None)
            raise
        self._count(result)
        for results in self._recorders():
            results.append(result)
        return result

    def _input_tokens(self, content: str | list[dict[str, Any]], previous: str | None) -> int:
        """Tokens of what is summarized: the previous summary, and the content as a request
        holds it. A message list is counted message by message, which looks up the counts
        the host made when those messages arrived (the counter keeps recent texts) instead
        of tokenizing the whole transcript again: 6 MB of input in the 2,000-turn replay."""
        tokens = self.counter.count_text(previous) if previous else 0
        if isinstance(content, str):
            return tokens + self.counter.count_text(content)
        messages = [m for m in content if isinstance(m, dict)]
        return tokens + self.counter.count_messages(messages) if messages else tokens

    def _escalate(
        self,
        content: str | list[dict[str, Any]],
        target: int,
        focus_topic: str | None,
        previous: str | None,
        input_tokens: int,
    ) -> SummaryResult:
        """Levels 0 and 1 from the backend, then truncation; an empty summary never counts.

        Truncation cuts the shortest backend summary, or the input itself when no
        level produced any text (nothing looked salient): losing everything is
        never the outcome of a summary.
        """
        candidates: list[tuple[int, str]] = []
        backend = self.backend_name
        for level in (0, 1):
            text, backend = self._call_backend(content, target, focus_topic, previous, level)
            if not text.strip():
                continue
            tokens = self.counter.count_text(text)
            if tokens <= target and tokens < input_tokens:
                return SummaryResult(
                    text=text,
                    level=level,
                    input_tokens=input_tokens,
                    output_tokens=tokens,
                    backend=backend,
                )
            candidates.append((tokens, text))
        limit = min(target, max(0, input_tokens - 1))
        shortest = (
            min(candidates, key=lambda c: c[0])[1] if candidates else _source(content, previous)
        )
        text = truncate_to_tokens(shortest, limit, self.counter)
        return SummaryResult(
            text=text,
            level=2,
            input_tokens=input_tokens,
            output_tokens=self.counter.count_text(text),
            backend=backend,
        )

    def _call_backend(
        self,
        content: str | list[dict[str, Any]],
        target: int,
        focus_topic: str | None,
        previous: str | None,
        level: int,
    ) -> tuple[str, str]:
        """The text of one level from a plugin, else the backend, with any half of a
        character (a model's JSON can carry ``\\ud83d`` alone) made U+FFFD: no store can
        encode it and providers refuse it, as in a message."""
        plugin_text = self._call_plugins(content, target, focus_topic, previous, level)
        if plugin_text is not None:
            return well_formed_text(plugin_text), "plugin"
        try:
            text = self.backend.summarize(content, target, focus_topic, previous, level)
        except SummarizerError:
            raise
        except Exception as exc:
            log.exception("summarizer backend %s failed", self.backend_name)
            raise SummarizerError(f"{self.backend_name} summarizer failed: {exc!r}") from exc
        return well_formed_text(text), self.backend_name

    def _call_plugins(
        self,
        content: str | list[dict[str, Any]],
        target: int,
        focus_topic: str | None,
        previous: str | None,
        level: int,
    ) -> str | None:
        if self.plugin_manager is None or not hasattr(
            self.plugin_manager.hook, "ctxengine_summarize"
        ):
            return None
        try:
            text = self.plugin_manager.hook.ctxengine_summarize(
                content=content,
                target_tokens=target,
                focus_topic=focus_topic,
                previous=previous,
                level=level,
            )
        except SummarizerError:
            raise
        except Exception:
            # A broken plugin must not stop compaction: the configured backend answers.
            log.exception(
                "a ctxengine_summarize plugin failed; using the %s backend", self.backend_name
            )
            return None
        return text if isinstance(text, str) else None

    def _count(self, result: SummaryResult | None) -> None:
        with self._lock:
            self._stats["calls"] += 1
            if result is None:
                self._stats["errors"] += 1
                return
            self._stats[f"level_{result.level}"] += 1
            self._stats["input_tokens"] += result.input_tokens
            self._stats["output_tokens"] += result.output_tokens


def _source(content: str | list[dict[str, Any]], previous: str | None) -> str:
    """The whole input as one text, the previous summary first: what truncation cuts when
    no level produced any text (rendered only then: most summaries never need it)."""
    return "\n\n".join(part for part in (previous, render_transcript(content)) if part)


def _empty_stats() -> dict[str, int]:
    return {
        "calls": 0,
        "level_0": 0,
        "level_1": 0,
        "level_2": 0,
        "errors": 0,
        "input_tokens": 0,
        "output_tokens": 0,
    }
