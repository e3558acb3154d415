"""Importers: other tools' transcripts as session files (``ctxengine convert``).

Each format's reader returns an :class:`Imported` (messages in one shape, plus the
count of what could not be kept, by reason). docs/session-format.md, "Importers",
documents each mapping and what it cannot keep.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from . import agents_sdk, claude_code, codex, langchain, openhands, swe_agent
from .base import Imported, TranscriptError

__all__ = ["FORMATS", "Imported", "TranscriptError", "import_file"]

_TEXT_READERS: dict[str, Callable[[str], Imported]] = {
    "claude-code": claude_code.read,
    "codex": codex.read,
    "mini-swe-agent": swe_agent.read_mini,
    "swe-agent": swe_agent.read_swe_agent,
    "openhands": openhands.read,
    "langchain": langchain.read,
}

#: The formats ``--from`` takes.
FORMATS: tuple[str, ...] = (*_TEXT_READERS, "openai-agents")


def import_file(path: str | Path, source_format: str) -> Imported:
    """Read ``path`` as a transcript of ``source_format``; TranscriptError says what is wrong."""
    from ..sessionfile import read_text

    path = Path(path)
    if source_format not in FORMATS:
        raise TranscriptError(
            f"unknown format {source_format!r}; --from takes one of {', '.join(FORMATS)}"
        )
    if not path.is_file():
        raise TranscriptError(f"{path}: no such file")
    try:
        if source_format == "openai-agents":
            imported = agents_sdk.read_path(path)
        else:
            imported = _TEXT_READERS[source_format](read_text(path))
        if not imported.messages:
            raise TranscriptError(f"no messages found; is this a {source_format} transcript?")
    except TranscriptError as exc:
        raise TranscriptError(f"{path} (as {source_format}): {exc}") from None
    imported.repair_lone_surrogates()
    return imported
