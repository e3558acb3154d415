"""The runtime's public names stay importable from where callers import them."""

from __future__ import annotations

import importlib

import ctxengine_host
from ctxengine_host.runtime import session as session_module

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
        is importlib.import_module("ctxengine_host.runtime.turns").ProviderRequest
    )


def test_package_level_lazy_names_resolve_to_the_same_objects():
    for name in ("ContextHost", "Session", "ProviderRequest", "TurnReport", "CompactionEvent"):
        assert getattr(ctxengine_host, name) is getattr(
            importlib.import_module(ctxengine_host._LAZY[name]), name
        )
    assert ctxengine_host.CompactionEvent is session_module.CompactionEvent


def test_all_lists_exactly_the_lazy_names_and_the_version():
    assert set(ctxengine_host.__all__) == set(ctxengine_host._LAZY) | {"__version__"}


def test_type_checking_imports_cover_every_lazy_name():
    """The TYPE_CHECKING block is what a type checker sees: it must name every export."""
    import ast
    from pathlib import Path

    tree = ast.parse(Path(ctxengine_host.__file__).read_text(encoding="utf-8"))
    guarded = next(
        node for node in tree.body if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.dump(node)
    )
    imported = {
        alias.asname or alias.name
        for node in ast.walk(guarded)
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    assert imported == set(ctxengine_host._LAZY)
    for name, module in ctxengine_host._LAZY.items():
        source = next(
            node.module
            for node in ast.walk(guarded)
            if isinstance(node, ast.ImportFrom) and any(a.name == name for a in node.names)
        )
        assert f"ctxengine_host.{source}" == module, name
