"""Relevance search reaches the whole history, however often its words recur later (#17)."""

from __future__ import annotations

import json

from conftest import make_engine, record_searches, uid


def ingest(engine, session, texts):
    engine.ingest(
        session,
        [
            {"role": "user", "content": t, "message_uid": f"{session}-{n}"}
            for n, t in enumerate(texts)
        ],
    )


def grep_recorded(engine, monkeypatch, texts):
    """Ingest ``texts`` as user messages, then ``amber service key`` (limit 3): the
    expressions the store was asked to search, and the result."""
    engine.ingest("s", [{"role": "user", "content": t, "message_uid": uid()} for t in texts])
    searched = record_searches(engine, monkeypatch)
    out = engine.handle_tool_call("lcm_grep", {"pattern": "amber service key", "limit": 3})
    return searched, json.loads(out)


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


def test_an_old_message_holding_the_rare_words_is_found_without_holding_every_word(
    tmp_path, database
):
    """The rarest words find the candidates: an old fact missing one query word, whose
    other word recurs in more later messages than the relevance window holds."""
    engine = make_engine(tmp_path, database=database, session="s", grep_relevance_window=100)
    fact = "PASS: the amber service answers K007Z"
    later = [f"handler {n}: amber lint clean, retry {n}" for n in range(600)]
    ingest(engine, "s", [fact, *later])
    out = json.loads(
        engine.handle_tool_call("lcm_grep", {"pattern": "amber service key", "limit": 10})
    )
    assert out["results"][0]["snippet"] == fact
    engine.dispose()


def test_a_tool_output_holding_every_word_is_in_the_pool_however_low_its_bm25(tmp_path, database):
    """Short messages holding one query word outscore a long tool output holding all of
    them (bm25 favours short texts; tool outputs weigh less): more of them than the pool
    holds must not push it out."""
    engine = make_engine(tmp_path, database=database, session="s", grep_rerank_pool=50)
    log = " ".join(f"line{n} ok" for n in range(60))
    fact = {
        "role": "tool",
        "tool_call_id": "c1",
        "content": f"PASS: the amber service key is K007Z; {log}",
        "message_uid": "s-fact",
    }
    call = {"id": "c1", "type": "function", "function": {"name": "run", "arguments": "{}"}}
    engine.ingest(
        "s",
        [
            {"role": "assistant", "content": "", "tool_calls": [call], "message_uid": "s-call"},
            fact,
        ],
    )
    ingest(
        engine, "s", [f"step {n}: lint ok" if n % 5 else f"step {n} (amber)" for n in range(3000)]
    )
    out = json.loads(
        engine.handle_tool_call("lcm_grep", {"pattern": "amber service key", "limit": 10})
    )
    assert any("K007Z" in r["snippet"] for r in out["results"])
    engine.dispose()


def test_a_word_common_enough_to_fill_a_share_of_the_pool_finds_no_candidates(
    tmp_path, database, monkeypatch
):
    """The rare words' matches are ranked while they fit a quarter of the pools (seeds.py):
    in a history of a few thousand messages every word of a query fits the whole pools,
    and its commonest word's matches would all be reranked in Python (#17)."""
    engine = make_engine(tmp_path, database=database, session="s", grep_rerank_pool=40)
    texts = [
        "the amber service key is K1",
        *(f"amber filler line {n}" for n in range(20)),
        *(f"service key rotated {n}" for n in range(3)),
    ]
    searched, out = grep_recorded(engine, monkeypatch, texts)
    assert searched and all('"amber"' not in expression for expression in searched)
    assert out["results"][0]["snippet"] == "the amber service key is K1"
    engine.dispose()


def test_a_rare_word_overflowing_the_pools_finds_the_candidates_and_no_common_word_is_ranked(
    tmp_path, database, monkeypatch
):
    """When even the rarest word has more matches than the pools take whole, the rarest
    words whose matches fit the relevance window find the candidates (the store keeps its
    best of them): ranking a common word would read its every match (bm25's statistics),
    time in proportion to the history. The old fact, one of more `amber` matches than the
    pool holds and a long one (bm25 favours the short), is still in: it holds every word."""
    texts = [
        "PASS: the amber service key is K007Z after the rotation of every shard in the fleet",
        *(f"amber filler {n}" for n in range(60)),
        *(f"service key rotated {n}" for n in range(150)),
    ]
    assert_amber_alone_ranked(tmp_path, database, monkeypatch, texts)


def assert_amber_alone_ranked(tmp_path, database, monkeypatch, texts):
    """Past a small pool and window, only ``amber`` finds candidates, and the fact wins."""
    engine = make_engine(
        tmp_path, database=database, session="s", grep_rerank_pool=40, grep_relevance_window=100
    )
    searched, out = grep_recorded(engine, monkeypatch, texts)
    assert searched and all(expression == '"amber"' for expression in searched), searched
    assert "K007Z" in out["results"][0]["snippet"]
    engine.dispose()


def test_a_word_in_more_than_half_of_the_texts_is_not_ranked_even_within_the_window(
    tmp_path, database, monkeypatch
):
    """bm25 weighs a word in most texts at nothing (its IDF is floored near zero): ranking
    its every match only costs time (30 ms for "command" in a real coding session). The
    rare words still find the fact, which holds the common word too."""
    texts = [
        "PASS: the amber service answers K007Z",
        *(f"amber filler {n}" for n in range(30)),
        *(f"service rotated {n}" for n in range(60)),
    ]
    assert_amber_alone_ranked(tmp_path, database, monkeypatch, texts)
