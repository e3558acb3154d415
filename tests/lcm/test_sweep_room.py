"""A sweep uses the room it has (issue #16): it frees what reaching its target takes while
the new leaf fits the summary budget, and a summary's target grows into the budget's room
at small windows instead of staying a few dozen tokens beside its header."""

from __future__ import annotations

import json
import re

from conftest import make_context, make_engine, service_summarize, uid

from ctxengine_lcm.compaction import LEAF_TARGET_SHARE, room_target, stranded_run
from ctxengine_lcm.engine import LcmEngine
from ctxengine_lcm.store import ContextItem

DEFAULTS = {
    "leaf_chunk_tokens": 20_000,
    "fresh_tail_messages": 24,
    "leaf_target_tokens": 1_000,
    "condensed_target_tokens": 1_200,
}


def agent_loop(steps: int, words: int = 60) -> list[dict]:
    """One task followed by a long tool loop, each step naming its own values."""
    history = [{"role": "user", "content": "Fix the failing export job.", "message_uid": uid()}]
    for n in range(steps):
        history.append(
            {
                "role": "assistant",
                "content": f"Step {n}: checked exporter_{n}.py, value v{n}=0x{n:04x}. "
                + " ".join(f"word{n}_{k}" for k in range(words)),
                "message_uid": uid(),
            }
        )
    return history


def swept(tmp_path, context_length: int, steps: int, **config) -> tuple[int, int]:
    """Tokens after one threshold sweep of a long loop, and the sweep's target."""
    engine = make_engine(tmp_path, context_length=context_length, **{**DEFAULTS, **config})
    history = agent_loop(steps)
    engine.ingest("s1", history)
    threshold = engine._compaction_threshold()
    result = engine.compress(history)
    assert result.compacted, result.reason
    return result.tokens_after, int(threshold * engine.settings.compact_target_fraction)


def test_a_sweep_frees_what_reaching_its_target_takes_while_the_budget_has_room(tmp_path):
    # Before: the whole raw run outside the 24-message tail went into one leaf, and the
    # context fell to a fifth of its threshold, room the next requests held nothing in.
    after, target = swept(tmp_path, 32_000, 160)
    assert 0.75 * target <= after <= target, (after, target)


def test_a_full_summary_budget_takes_the_whole_chunk(tmp_path):
    # Without room for the leaf every extra leaf would force a condensation: one leaf
    # takes what lies outside the tail, as before.
    after, target = swept(tmp_path, 32_000, 160, summary_budget_fraction=0.01)
    assert after < 0.6 * target, (after, target)


def test_summary_targets_take_half_the_budget_room_between_floor_and_configured():
    assert room_target(1_000, 116, 730) == 365  # an 8k window's first leaf
    assert room_target(1_000, 116, 100) == 116  # never below the window-scaled floor
    assert room_target(1_000, 920, 5_800) == 1_000  # never above the configured size


def test_a_small_window_leaf_is_asked_for_half_the_budget_room(tmp_path):
    # Before: the window-scaled 4% of the threshold (240 tokens here), a fifth of the room.
    asked: list[int] = []

    def summarize(content, target_tokens, focus_topic=None, previous=None):
        asked.append(target_tokens)
        return service_summarize(content, target_tokens, focus_topic, previous)

    engine = LcmEngine(config=DEFAULTS, context=make_context(tmp_path, summarize))
    engine.update_model("gpt-4", 8_000)
    engine.on_session_start("s1")
    history = agent_loop(60, words=20)
    engine.ingest("s1", history)
    threshold = engine._compaction_threshold()
    assert engine.compress(history).compacted
    budget = int(threshold * engine.settings.summary_budget_fraction)
    assert asked[0] == budget // 2 > LEAF_TARGET_SHARE * threshold, (asked, threshold)


def test_a_large_tool_call_in_the_tail_is_summarized_rather_than_left_out(tmp_path):
    """A long tool loop whose one large call (a file written through the tool's
    arguments) would enter the fresh tail with its result, past the tail's token bound:
    with every raw message in the tail, the sweep found nothing to summarize and the
    request had to leave history out (a real Claude Code session in an 8k window). The
    tail keeps to its bound instead, and the call is summarized with its result."""
    engine = make_engine(tmp_path, context_length=8_000, **DEFAULTS)
    big_file = " ".join(f"line{n} = value{n}" for n in range(700))
    history = [
        {"role": "user", "content": "Port the utilities to Rust.", "message_uid": uid()},
        {"role": "assistant", "content": None, "message_uid": uid(), "tool_calls": [
            {"id": "w", "type": "function",
             "function": {"name": "write_file", "arguments": json.dumps({"text": big_file})}}]},
        {"role": "tool", "tool_call_id": "w", "content": "written", "message_uid": uid()},
    ]  # fmt: skip
    for n in range(5):
        history += [
            {"role": "assistant", "content": None, "message_uid": uid(), "tool_calls": [
                {"id": f"r{n}", "type": "function",
                 "function": {"name": "read_file", "arguments": json.dumps({"n": n})}}]},
            {"role": "tool", "tool_call_id": f"r{n}", "message_uid": uid(),
             "content": " ".join(f"out{n}_{k}" for k in range(125))},
        ]  # fmt: skip
    engine.ingest("s1", history)
    threshold = engine._compaction_threshold()
    assert engine._context_tokens() > threshold
    result = engine.compress(history)
    assert result.compacted, result.reason
    assert result.tokens_after <= threshold


def test_the_tasks_of_past_turns_do_not_keep_summaries_apart(tmp_path):
    """A multi-turn session in a small window: each task is pinned while its tool loop is
    summarized, then sits alone between that summary and the one before it. Too small for
    a leaf, it kept every two summaries apart (none could condense), so the context grew
    by a summary and a task every turn until requests left all history out (a generated
    300-turn session at 8,000 tokens: every request after turn 56). Past the summary
    budget such a task is summarized and condensed with its neighbours."""
    engine = make_engine(tmp_path, context_length=8_000, **DEFAULTS)
    history: list[dict] = []
    threshold = engine._compaction_threshold()
    peak = 0
    for task in range(40):
        task_message = {"role": "user", "content": f"Task {task}: fix bug {task}."}
        turn_messages = [{**task_message, "message_uid": uid()}, *agent_loop(30, words=40)[1:]]
        history += turn_messages
        engine.ingest("s1", turn_messages)
        if engine.should_compress(engine._context_tokens()):
            engine.compress(history)
        peak = max(peak, engine._context_tokens())
    items = engine.store.context_items(engine._conversation())
    kinds = "".join("s" if i.kind == "summary" else "m" for i in items)
    assert peak <= threshold, (peak, threshold, kinds)  # before: 10,080 against 6,000
    # Lone tasks between summaries: as many as the summary budget holds summaries (it is
    # not over it), not one a turn (before: 40).
    assert len(re.findall("(?<=s)m(?=s)", kinds)) <= 12, kinds


def test_a_stranded_run_is_the_oldest_raw_run_beside_a_summary():
    def summary(n: int) -> ContextItem:
        return ContextItem(n, "summary", n, 150, 0, "")

    def message(n: int, role: str = "user") -> ContextItem:
        return ContextItem(n, "message", n, 20, -1, role)

    items = [message(0), message(1, "assistant"), summary(2), message(3), summary(4), message(5)]
    assert stranded_run(items, tail_start=5, pinned=None) == [0, 1]
    assert stranded_run(items[2:], tail_start=3, pinned=None) == [1]
    # The pinned task and the tail are never taken; a run beside neither summary (between
    # the task and the tail) is passed over: its leaf would have nothing to condense with.
    pinned_between = [summary(0), message(1), message(2, "assistant"), message(3)]
    assert stranded_run(pinned_between, tail_start=3, pinned=1) == []
    assert stranded_run([summary(0), message(1), message(2)], tail_start=1, pinned=None) == []


def test_a_large_task_leaves_the_tail_what_reaching_the_target_leaves(tmp_path):
    """A task prompt of 40% of the threshold beside a few summaries left the tail less than
    its bound: every raw message was in the tail, the summaries were under their budget,
    and sweeps stopped nothing-compactable past the threshold, so requests left history
    out (34 of 40 real mini-swe-agent sessions at 8k). The tail then keeps what reaching
    the target leaves, and past the threshold the summaries condense under their budget."""
    engine = make_engine(tmp_path, context_length=8_000, **DEFAULTS)
    threshold = engine._compaction_threshold()
    words = " ".join(f"requirement{k}" for k in range(threshold // 5))
    history = [{"role": "user", "content": f"Fix the export job. {words}", "message_uid": uid()}]
    engine.ingest("s1", history)
    assert engine._context_tokens() > 0.35 * threshold
    over: list[int] = []
    for step in agent_loop(80, words=50)[1:]:
        history.append(step)
        engine.ingest("s1", [step])
        if engine.should_compress(engine._context_tokens()):
            engine.compress(history)
        if engine._context_tokens() > threshold:
            over.append(engine._context_tokens())
    assert not over, (len(over), over[:5], threshold)
