"""Errors of the summarizer service."""

from __future__ import annotations


class SummarizerError(RuntimeError):
    """The summarizer failed for good (bad credentials, quota exhausted, retries spent).

    Engines abort the compaction and keep the transcript when they see it.
    """
