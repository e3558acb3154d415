"""The services the kit gives an engine: the host's real token counter and summarizer."""

from __future__ import annotations

from pathlib import Path

from ..contract.context import EngineContext
from ..summarizer import SummarizerService
from ..tokens import TokenCounter


def kit_engine_context(engine_name: str, data_dir: Path, counter: TokenCounter) -> EngineContext:
    """An ``EngineContext`` as the host builds it (offline summarizer), rooted at ``data_dir``."""
    data_dir.mkdir(parents=True, exist_ok=True)
    service = SummarizerService(None, counter)
    return EngineContext(
        engine_name=engine_name,
        data_dir=data_dir,
        count_tokens=counter.count_any,
        summarize=lambda content, target_tokens, focus_topic=None, previous=None: service.summarize(
            content, target_tokens, focus_topic=focus_topic, previous=previous
        ),
    )
