"""The summarizer service engines reach through ``EngineContext.summarize``.

Backends: ``extractive`` (default, offline) and ``openai`` (any OpenAI-compatible
endpoint), chosen by ``[summarizer] backend``; plugins may answer first through
the ``ctxengine_summarize`` hook. See docs/summarizer.md.
"""

from .errors import SummarizerError
from .extractive import salient_lines
from .service import SummarizerService
from .settings import ExtractiveSettings, OpenAISettings, parse_backend_settings

__all__ = [
    "ExtractiveSettings",
    "OpenAISettings",
    "SummarizerError",
    "SummarizerService",
    "parse_backend_settings",
    "salient_lines",
]
