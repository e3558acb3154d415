"""The runtime's public names stay importable from where callers import them."""

from __future__ import annotations

import importlib

import ctxengine_host
from ctxengine_host import session as session_module

SESSION_NAMES = (
    "Session",
    "ProviderRequest",
    "TurnReport",
    "CompactionEvent",
    "BudgetError",
    "SessionClosedError",
    "TranscriptView",
    "LiveEntry",
    "COMPACTION_REASONS",
)


def test_session_module_re_exports_the_turn_data_and_errors():
    for name in SESSION_NAMES:
        assert getattr(session_module, name) is not None, name
    assert set(SESSION_NAMES) <= set(session_module.__all__)
    assert (
        session_module.ProviderRequest
        is importlib.import_module("ctxengine_host.turns").ProviderRequest
    )


def test_package_level_lazy_names_resolve_to_the_same_objects():
    for name in ("ContextHost", "Session", "ProviderRequest", "TurnReport", "CompactionEvent"):
        assert getattr(ctxengine_host, name) is getattr(
            importlib.import_module(ctxengine_host._LAZY[name]), name
        )
    assert ctxengine_host.CompactionEvent is session_module.CompactionEvent
