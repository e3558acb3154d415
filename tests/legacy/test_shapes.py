"""Legacy on sessions of every shape (#14), replayed through the runtime: the rolling
summary covers a single long tool loop, no request is cut by the host, nothing is left out
without a summary, and the summary tokens written stay under the session's own tokens."""

from __future__ import annotations

import pytest
from support.shapes import SHAPES, write_shape

from ctxengine_host.replay.driver import ReplayOptions, replay_file
from ctxengine_host.sessionfile import load_session
from ctxengine_host.tokens import TokenCounter


def replay(tmp_path, shape: str, window: int) -> tuple[dict, int]:
    path = write_shape(tmp_path, shape)
    config = tmp_path / "ctxengine.toml"
    config.write_text("")
    options = ReplayOptions(engine="legacy", context_length=window, config_path=str(config))
    counter = TokenCounter("gpt-4")
    own = sum(counter.count_message(m) for m in load_session(path).messages)
    return replay_file(path, options).to_dict(), own


@pytest.mark.parametrize("shape", SHAPES)
def test_every_live_message_is_sent_or_covered(tmp_path, shape):
    report, own_tokens = replay(tmp_path, shape, 8192)
    summary = report["summary"]
    assert report["errors"] == []
    assert summary["omitted_without_cover"] == 0
    assert summary["compactions"] > 0 and summary["turns_over_budget"] == 0
    assert summary["summary_tokens_total"] <= own_tokens


def test_a_single_long_loop_does_not_thrash_at_a_16k_window(tmp_path):
    report, own_tokens = replay(tmp_path, "single-loop", 16384)
    summary = report["summary"]
    assert summary["host_substitutions"] == 0 and not summary["window_too_small"]
    # One compaction per a few calls at most, not one per call (the #14 thrash).
    assert summary["compactions"] <= summary["provider_calls"] // 4
    assert summary["summary_tokens_total"] <= own_tokens
    assert summary["probes_in_context"] >= summary["probes_total"] // 2
