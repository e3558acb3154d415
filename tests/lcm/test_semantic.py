"""The optional semantic index of lcm_grep: off by default; on, a question sharing no word
with its fact finds it; it fails with the fix when its extra is missing or the store is
PostgreSQL; one session never sees another's messages; the model loads offline.

Needs ``ctxengine-lcm[semantic]`` (wordllama): without it the tests skip, except under
CI (``CI`` set), where they fail.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sqlite3
import subprocess
import sys
import time

import pytest
from conftest import make_engine, uid
from support.network import assert_no_escape, guarded_env

from ctxengine_lcm import semantic
from ctxengine_lcm.config import LcmConfig
from ctxengine_lcm.semantic import INSTALL_HINT, SemanticIndexUnavailable

FACT = "The office moves to Berlin in March."
QUESTION = "where will our workplace relocate"
OTHERS = [
    "Let me look at the failures in tests/test_api.py first.",
    "I ran the linter and fixed two unused imports.",
    "The CI pipeline takes about twelve minutes end to end.",
    "We keep sessions in Redis, keyed by user id.",
    "The frontend is built with Vite and served from dist/.",
    "Deploys go out every Tuesday after the standup.",
    "The invoice PDF renderer lives in billing/render.py.",
    "Okay, I will update the README with the new install steps.",
    "The migration added an index on orders.created_at.",
    "Running pytest now; 214 passed, 3 skipped.",
]


@pytest.fixture
def wordllama() -> None:
    if importlib.util.find_spec("wordllama") is None:
        reason = f"wordllama is not installed ({INSTALL_HINT})"
        if os.environ.get("CI"):
            pytest.fail(f"the semantic index tests need it under CI: {reason}", pytrace=False)
        pytest.skip(reason)


def history(fact: str = FACT) -> list[dict]:
    texts = [*OTHERS[:5], fact, *OTHERS[5:]]
    return [
        {"role": "user" if i % 2 else "assistant", "content": text, "message_uid": uid()}
        for i, text in enumerate(texts)
    ]


def grep(engine, pattern: str) -> list[str]:
    out = json.loads(engine.handle_tool_call("lcm_grep", {"pattern": pattern}))
    return [r["snippet"] for r in out["results"]]


def vectors(engine) -> int:
    with sqlite3.connect(engine.database_path) as conn:
        return conn.execute("SELECT count(*) FROM message_vectors").fetchone()[0]


def test_the_index_is_off_by_default_and_the_question_alone_misses_the_fact(tmp_path):
    assert LcmConfig().semantic_index is False
    engine = make_engine(tmp_path)
    engine.ingest("s1", history())
    assert FACT not in grep(engine, QUESTION)
    assert vectors(engine) == 0  # nothing embedded, nothing imported


def test_with_the_index_on_a_question_sharing_no_word_finds_its_fact(tmp_path, wordllama):
    engine = make_engine(tmp_path, semantic_index=True)
    engine.ingest("s1", history())
    assert vectors(engine) == 0  # embedded lazily, by the first search
    found = grep(engine, QUESTION)
    assert FACT in found
    assert vectors(engine) == len(OTHERS) + 1
    # A message holding the words as written still ranks above the semantic candidates.
    engine.ingest("s1", [{"role": "user", "content": "Relocate the logs.", "message_uid": uid()}])
    found = grep(engine, QUESTION)
    assert found.index("Relocate the logs.") < found.index(FACT)


def test_a_search_out_of_time_still_embeds_a_batch(tmp_path, wordllama, monkeypatch):
    """On a loaded machine the model's load can use up the budget: the search still makes
    progress (one batch), so the index fills and meaning is found."""
    real = semantic.embedder

    def slow_first_load():
        time.sleep(0.3)  # the load, on a busy machine: longer than the search's budget
        monkeypatch.setattr(semantic, "embedder", real)
        return real()

    monkeypatch.setattr(semantic, "embedder", slow_first_load)
    engine = make_engine(tmp_path, semantic_index=True, grep_time_budget_seconds=0.2)
    engine.ingest("s1", history())
    grep(engine, QUESTION)
    assert vectors(engine) == len(OTHERS) + 1


def test_a_second_session_never_gets_the_first_ones_messages(tmp_path, wordllama):
    first = make_engine(tmp_path, semantic_index=True)
    first.ingest("s1", history())
    own = ["Lunch is at noon today.", "The build is green again."]
    second = make_engine(tmp_path, session="s2", semantic_index=True)
    second.ingest("s2", [{"role": "user", "content": t, "message_uid": uid()} for t in own])
    assert set(grep(second, QUESTION)) <= set(own)
    with sqlite3.connect(second.database_path) as conn:
        embedded = conn.execute("SELECT DISTINCT conversation_id FROM message_vectors").fetchall()
    assert len(embedded) == 1  # only the caller's conversation was read and embedded
    assert FACT in grep(first, QUESTION)


def test_a_missing_extra_fails_with_the_fix(tmp_path, monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(
        semantic.importlib.util,
        "find_spec",
        lambda name, *a: None if name == "wordllama" else real(name, *a),
    )
    # The session start opens the store: it fails there, not at the first search.
    with pytest.raises(SemanticIndexUnavailable, match=r'pip install "ctxengine-lcm\[semantic\]"'):
        make_engine(tmp_path, semantic_index=True)


def test_postgresql_is_refused_with_the_reason():
    with pytest.raises(SemanticIndexUnavailable, match="SQLite store only"):
        semantic.require(postgres=True)


def test_the_model_loads_from_the_wheel_without_the_network(tmp_path, wordllama):
    env = guarded_env(tmp_path)
    env.update(HOME=str(tmp_path), HF_HUB_OFFLINE="1")  # no cache to fall back on
    code = (
        "from ctxengine_lcm.semantic import embedder\n"
        "m = embedder()\n"
        "v = m.embed(['the office moves', 'where will our workplace relocate', ''])\n"
        "print(v.shape, round(float(v[0] @ v[1]), 3), float(abs(v[2]).sum()))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("(3, 256)") and done.stdout.rstrip().endswith(" 0.0")
    assert_no_escape(env)
