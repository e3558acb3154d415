"""Fixtures for the LCM engine tests: a real SQLite store, tiktoken counting and the host's
real summarizer service (extractive backend); a few tests swap in summarizers that fail,
stall or ramble to prove the engine copes."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from ctxengine_host.config import SummarizerSection
from ctxengine_host.context import EngineContext
from ctxengine_host.messages import content_text
from ctxengine_host.models import SummaryResult
from ctxengine_host.summarizer import SummarizerService
from ctxengine_host.tokens import TokenCounter
from ctxengine_lcm.engine import LcmEngine

COUNTER = TokenCounter("gpt-4")


def count_tokens(value: Any) -> int:
    if isinstance(value, str):
        return COUNTER.count_text(value)
    if isinstance(value, dict):
        return COUNTER.count_message(value)
    return COUNTER.count_messages(value)


def headline_summarize(content: Any, target_tokens: int, focus_topic=None, previous=None):
    """The first words of each source line, cut to the target: deterministic and small."""
    if isinstance(content, str):
        lines = [ln for ln in content.splitlines() if ln.strip()]
    else:
        lines = [f"{m.get('role')}: {content_text(m)}" for m in content]
    text = " | ".join(" ".join(ln.split()[:8]) for ln in lines)
    if focus_topic:
        text = f"(focus: {focus_topic}) {text}"
    words = text.split()
    text = " ".join(words[: max(8, target_tokens // 2)])
    return SummaryResult(text=text, level=0, output_tokens=count_tokens(text), backend="test")


SERVICE = SummarizerService(SummarizerSection(), COUNTER)
FOCUS_TOPICS: list[str | None] = []


def service_summarize(content: Any, target_tokens: int, focus_topic=None, previous=None):
    FOCUS_TOPICS.append(focus_topic)
    return SERVICE.summarize(content, target_tokens, focus_topic=focus_topic, previous=previous)


def make_context(data_dir: Path, summarize=service_summarize) -> EngineContext:
    return EngineContext(
        engine_name="lcm", data_dir=data_dir, count_tokens=count_tokens, summarize=summarize
    )


def make_engine(
    data_dir: Path, context_length: int = 8_000, session: str = "s1", **config: Any
) -> LcmEngine:
    defaults = {
        "leaf_chunk_tokens": 1_500,
        "fresh_tail_messages": 8,
        "leaf_target_tokens": 120,
        "condensed_target_tokens": 150,
    }
    engine = LcmEngine(config={**defaults, **config}, context=make_context(data_dir))
    engine.update_model("gpt-4", context_length)
    engine.on_session_start(session)
    return engine


def uid() -> str:
    return uuid.uuid4().hex


def turn(n: int, words: int = 60) -> list[dict[str, Any]]:
    """One user/assistant/tool exchange with distinct words so searches can find it."""
    filler = " ".join(f"w{n}x{i}" for i in range(words))
    call_id = f"call_{n}"
    return [
        {"role": "user", "content": f"question {n} about topic{n}: {filler}", "message_uid": uid()},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": "read_file", "arguments": f'{{"path": "f{n}.py"}}'},
                }
            ],
            "message_uid": uid(),
        },
        {
            "role": "tool",
            "tool_call_id": call_id,
            "content": f"file f{n}.py: {filler}",
            "message_uid": uid(),
        },
        {"role": "assistant", "content": f"answer {n}: fact{n} is value{n}", "message_uid": uid()},
    ]


@pytest.fixture
def engine(tmp_path: Path):
    eng = make_engine(tmp_path)
    yield eng
    eng.dispose()


def check_invariants(db_path: Path | str) -> dict[str, int]:
    """Check the DAG of every conversation with plain SQL (independent of the store code).

    Every stored message is reachable from its conversation's active context exactly once,
    in sequence order; every summary exactly once; running totals match the items.
    Returns counts for the caller's own assertions.
    """
    import sqlite3

    conn = sqlite3.connect(str(db_path))
    try:
        totals = {"conversations": 0, "messages": 0, "summaries": 0}
        for conv_id, context_tokens, message_count in conn.execute(
            "SELECT id, context_tokens, message_count FROM conversations"
        ).fetchall():
            totals["conversations"] += 1
            items = conn.execute(
                "SELECT kind, ref_id, token_count FROM context_items WHERE conversation_id=? "
                "ORDER BY ordinal",
                (conv_id,),
            ).fetchall()
            assert context_tokens == sum(t for _, _, t in items), "running total drifted"
            seen_messages: list[int] = []
            seen_summaries: list[int] = []

            def walk(
                kind: str, ref: int, seen_messages=seen_messages, seen_summaries=seen_summaries
            ) -> None:
                if kind == "message":
                    seen_messages.append(ref)
                    return
                seen_summaries.append(ref)
                (skind,) = conn.execute("SELECT kind FROM summaries WHERE id=?", (ref,)).fetchone()
                if skind == "leaf":
                    rows = conn.execute(
                        "SELECT message_id FROM summary_messages WHERE summary_id=? ORDER BY ord",
                        (ref,),
                    ).fetchall()
                    assert rows, f"leaf summary {ref} has no sources"
                    seen_messages.extend(r[0] for r in rows)
                else:
                    rows = conn.execute(
                        "SELECT source_id FROM summary_sources WHERE summary_id=? ORDER BY ord",
                        (ref,),
                    ).fetchall()
                    assert rows, f"condensed summary {ref} has no sources"
                    for (child,) in rows:
                        walk("summary", child, seen_messages, seen_summaries)

            for kind, ref, _ in items:
                walk(kind, ref)
            stored = [
                r[0]
                for r in conn.execute(
                    "SELECT id FROM messages WHERE conversation_id=? ORDER BY seq", (conv_id,)
                )
            ]
            assert len(stored) == message_count
            assert seen_messages == stored, "messages not reachable exactly once, in order"
            all_summaries = {
                r[0]
                for r in conn.execute(
                    "SELECT id FROM summaries WHERE conversation_id=?", (conv_id,)
                )
            }
            assert sorted(seen_summaries) == sorted(all_summaries), "orphan or shared summary"
            for sid, dm in conn.execute(
                "SELECT id, descendant_messages FROM summaries WHERE conversation_id=?",
                (conv_id,),
            ):
                assert dm > 0, f"summary {sid} covers no messages"
            totals["messages"] += len(stored)
            totals["summaries"] += len(all_summaries)
        return totals
    finally:
        conn.close()


def drive(
    engine: LcmEngine, turns: int, start: int = 0, budget: int = 6_000, session: str = "s1"
) -> list[dict[str, Any]]:
    """Feed ``turns`` exchanges the way the runtime does: ingest, select, compress when asked."""
    history: list[dict[str, Any]] = [{"role": "system", "content": "You are a coding agent."}]
    for n in range(start, start + turns):
        batch = turn(n)
        history += batch
        engine.ingest(session, batch)
        result = engine.select_context(history, budget_tokens=budget)
        if engine.should_compress(result.estimated_tokens):
            engine.compress(history)
    return history
