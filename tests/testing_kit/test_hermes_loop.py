"""Our exported engines in a Hermes-style loop: no uids, compress on the host's list.

The released framework (0.19.0) calls ``compress`` and ``handle_tool_call(messages=)``
only; the current ABC adds ``select_context`` before each call and
``on_turn_complete`` at turn end. Either way the exported ``lcm`` must store every
message exactly once (identical messages sent on purpose included), always show
the newest message, and keep the system prompt the size it was.
"""

from __future__ import annotations

import sqlite3

import pytest

from ctxengine_host.discovery.compat import FrameworkEngineAdapter
from ctxengine_host.testing.context import kit_engine_context
from ctxengine_host.testing.hermes_loop import FACT, SYSTEM_PROMPT, run_hermes_loop
from ctxengine_host.tokens import TokenCounter
from ctxengine_lcm.assembly import system_prompt_addition
from ctxengine_lcm.engine import LcmEngine
from ctxengine_legacy.engine import LegacyEngine

WINDOW = 4000


def stored_messages(engine: LcmEngine) -> list[tuple[str, str]]:
    """(role, text) of every stored message: the verbatim content, kept in ``extra_json``
    when the ``content`` column holds the searchable text (a tool call's arguments)."""
    with sqlite3.connect(engine.database_path) as db:
        return db.execute(
            "SELECT role, CASE WHEN json_type(extra_json, '$.content') IS NULL THEN content "
            "ELSE coalesce(json_extract(extra_json, '$.content'), '') END "
            "FROM messages ORDER BY conversation_id, seq"
        ).fetchall()


@pytest.fixture
def lcm(tmp_path):
    return LcmEngine(context=kit_engine_context("lcm", tmp_path / "data", TokenCounter("gpt-4")))


@pytest.mark.parametrize(
    ("current_abc", "messages"), [(False, 2_000), (True, 2_000), (True, 10_000)]
)
def test_exported_lcm_stores_every_message_once(lcm, current_abc, messages):
    report = run_hermes_loop(
        FrameworkEngineAdapter(lcm), messages=messages, window=WINDOW, current_abc=current_abc
    )
    assert report.compactions >= 1
    assert stored_messages(lcm) == report.sent  # each once, in order, repeats included
    assert report.newest_missing == []
    assert report.largest_request <= WINDOW
    expected = {len(SYSTEM_PROMPT)}
    if current_abc:  # the request's system prompt carries lcm's addition, once: the text
        # that mentions summaries only while the request holds one (never compounding)
        expected = {len(SYSTEM_PROMPT) + len(system_prompt_addition(s)) + 2 for s in (False, True)}
    assert report.system_sizes and report.system_sizes <= expected
    assert FACT in report.grep_answer


def test_exported_legacy_keeps_the_newest_message_and_the_system_prompt(tmp_path):
    context = kit_engine_context("legacy", tmp_path / "data", TokenCounter("gpt-4"))
    report = run_hermes_loop(
        FrameworkEngineAdapter(LegacyEngine(context=context)),
        messages=600,
        window=WINDOW,
        current_abc=True,
    )
    assert report.compactions >= 1 and report.newest_missing == []
    assert report.system_sizes == {len(SYSTEM_PROMPT)}
    assert report.largest_request <= WINDOW
