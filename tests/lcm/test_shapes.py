"""LCM on sessions of every shape (#14), replayed through the runtime, on each backend:
nothing is left out of a request without a summary covering it, and a single long tool
loop is summarized inside its one turn."""

from __future__ import annotations

import json

import pytest
from support.shapes import SHAPES, write_shape

from ctxengine_host.replay.driver import ReplayOptions, replay_file


def replay(tmp_path, database: str, shape: str, window: int) -> dict:
    session = write_shape(tmp_path, shape)
    config = tmp_path / "ctxengine.toml"
    config.write_text(f"[engines.lcm]\ndatabase = {json.dumps(database)}\n")
    options = ReplayOptions(engine="lcm", context_length=window, config_path=str(config))
    return replay_file(session, options).to_dict()


@pytest.mark.parametrize("shape", SHAPES)
def test_every_live_message_is_sent_or_covered(tmp_path, database, shape):
    report = replay(tmp_path, database, shape, 16384)
    summary = report["summary"]
    assert report["errors"] == []
    assert summary["omitted_without_cover"] == 0 and summary["requests_with_omissions"] == 0
    assert summary["compactions"] > 0 and summary["compaction_failures"] == 0
    assert summary["host_substitutions"] == 0 and summary["turns_over_budget"] == 0
    assert summary["final_sent_messages"] < summary["final_live_messages"]


def test_a_single_long_loop_is_summarized_inside_its_turn(tmp_path, database):
    report = replay(tmp_path, database, "single-loop", 16384)
    summary = report["summary"]
    assert summary["turns"] == 1
    assert summary["compactions"] >= 5 and summary["summary_tokens_total"] > 0
    assert summary["omitted_without_cover"] == 0
    assert summary["probes_search_found"] >= summary["probes_total"] - 1


def test_a_long_system_prompt_is_not_counted_twice(tmp_path, database):
    """A coding agent's system prompt of ~6,000 tokens (Codex's instructions) with large
    file reads: the host's budget leaves the prompt out and the engine counted it again,
    so its requests dropped their summaries (messages left out uncovered on real Codex
    sessions), and once it used the room, the host saw an estimate holding the prompt
    and forced compactions the requests did not need."""
    report = replay(tmp_path, database, "long-system-prompt", 20000)
    summary = report["summary"]
    assert report["errors"] == [] and summary["compactions"] > 0
    assert summary["omitted_without_cover"] == 0 and summary["requests_with_omissions"] == 0
    reasons = [reason for turn in report["turns"] for reason in turn["compaction_reasons"]]
    assert "overflow" not in reasons
