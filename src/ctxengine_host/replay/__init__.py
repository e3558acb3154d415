"""Replaying recorded sessions through the runtime, and comparing engines on them."""

from __future__ import annotations

from .driver import (
    DEFAULT_CONTEXT_LENGTH,
    DEFAULT_MODEL,
    ReplayInputError,
    ReplayOptions,
    replay_file,
)
from .model import SCHEMA, ProbeResult, ReplayReport, TurnRow

__all__ = [
    "DEFAULT_CONTEXT_LENGTH",
    "DEFAULT_MODEL",
    "SCHEMA",
    "ProbeResult",
    "ReplayInputError",
    "ReplayOptions",
    "ReplayReport",
    "TurnRow",
    "replay_file",
]
