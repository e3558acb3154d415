"""Relevance search reaches the whole history, however often its words recur later (#17)."""

from __future__ import annotations

import json

from conftest import make_engine


def ingest(engine, session, texts):
    engine.ingest(
        session,
        [
            {"role": "user", "content": t, "message_uid": f"{session}-{n}"}
            for n, t in enumerate(texts)
        ],
    )


def test_an_old_message_holding_every_word_outranks_a_window_of_later_matches(tmp_path, database):
    engine = make_engine(tmp_path, database=database, session="s", grep_relevance_window=100)
    fact = "PASS: the amber service key is K007Z"
    later = [f"handler {n}: amber lint clean, retry {n}" for n in range(400)]
    ingest(engine, "s", [fact, *later])
    raw = engine.handle_tool_call("lcm_grep", {"pattern": "amber service key", "limit": 10})
    out = json.loads(raw)
    assert out["results"][0]["snippet"] == fact
    recency = json.loads(
        engine.handle_tool_call("lcm_grep", {"pattern": "amber service key", "sort": "recency"})
    )
    assert fact not in [r["snippet"] for r in recency["results"]]  # newest first, as before
    engine.dispose()
