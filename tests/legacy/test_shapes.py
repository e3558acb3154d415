"""Legacy on sessions of every shape (#14), replayed through the runtime: the rolling
summary covers a single long tool loop, no request is cut by the host, nothing is left out
without a summary, and the summary tokens written stay under the session's own tokens."""

from __future__ import annotations

import pytest
from support.shapes import SHAPES, write_shape

from ctxengine_host.contract.models import SummaryResult
from ctxengine_host.replay.driver import ReplayOptions, replay_file
from ctxengine_host.replay.generator import generate_single_loop, write_session
from ctxengine_host.replay.sessionfile import load_session
from ctxengine_host.tokens import TokenCounter
from ctxengine_legacy.engine import FOLD_NOTE_PREFIX
from ctxengine_legacy.summary_message import is_summary_message

from .conftest import long_session


def replay(tmp_path, shape: str, window: int, path=None) -> tuple[dict, int]:
    path = path or write_shape(tmp_path, shape)
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
    """The benchmark's 400-step loop (before: 165 compactions, 10 requests cut by the host,
    98,975 summary tokens for a 291,617-token session, 5 of 16 probes in context)."""
    path, _ = write_session(tmp_path / "loop-400.jsonl", generate_single_loop(400, 400))
    report, own_tokens = replay(tmp_path, "single-loop", 16384, path)
    summary = report["summary"]
    # One compaction per several calls, not one per two (the #14 thrash).
    assert summary["compactions"] <= summary["provider_calls"] // 6
    assert summary["host_substitutions"] == 0
    assert summary["summary_tokens_total"] <= own_tokens // 5
    assert summary["probes_in_context"] >= summary["probes_total"] // 2
    assert not summary["window_too_small"]


def test_once_the_summary_budget_is_spent_compactions_fold_instead_of_resummarizing(
    make_engine,
):
    calls = []

    def summarize(content, target_tokens, focus_topic=None, previous=None):
        calls.append(target_tokens)
        return SummaryResult(text="Summary text. " * 30, level=0, output_tokens=120)

    engine = make_engine(window=8192, summarize=summarize, max_summary_token_ratio=0.01)
    first = engine.compress(long_session(30)).messages
    assert len(calls) == 1  # the first summary is always written
    second = engine.compress(first + long_session(30)[1:]).messages
    assert len(calls) == 1  # the budget (1% of the session) is spent: no second summary
    (carrier,) = [m for m in second if is_summary_message(m)]
    assert FOLD_NOTE_PREFIX in carrier["content"] and "Summary text." in carrier["content"]
    assert engine.get_status()["last_compaction"]["compacted"]


def test_a_task_over_a_quarter_of_the_budget_keeps_its_head_and_tail(make_engine):
    from ctxengine_host.contract.tasktext import TASK_MARKER_PREFIX

    task = "Fix the parser. " + " ".join(f"Case {i} fails on long input." for i in range(900))
    task += " Finally: run the whole suite."
    messages = long_session(12)
    messages.append({"role": "user", "content": task, "message_uid": "task-uid"})
    messages.append({"role": "assistant", "content": "On it."})
    engine = make_engine(window=16384)
    result = engine.compress(messages)
    (shortened,) = [m for m in result.messages if m.get("message_uid") == "task-uid"]
    text = shortened["content"]
    assert text.startswith("Fix the parser. Case 0 fails") and text.endswith("the whole suite.")
    assert TASK_MARKER_PREFIX in text
    assert engine._count_message(shortened) <= 16384 / 4 * 1.1  # no host: the window is the budget
