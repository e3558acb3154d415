"""Fixtures for the LCM engine tests: a real store, tiktoken counting and the host's real
summarizer service (extractive backend); a few tests swap in summarizers that fail, stall
or ramble to prove the engine copes.

Tests that take ``database`` run twice: on a SQLite file, then on a fresh PostgreSQL schema
(marker ``postgres``; ``tests/pg/fixtures.py`` says when those skip).
"""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pg.fixtures import fresh_schema_url, pg_connect, pg_database  # noqa: F401  (fixture)
from pg.invariants import check_lcm_invariants

from ctxengine_host.config import SummarizerSection
from ctxengine_host.contract.context import EngineContext
from ctxengine_host.contract.messages import content_text
from ctxengine_host.contract.models import SummaryResult
from ctxengine_host.stores.pg import close_pools, is_postgres_url, parse_url
from ctxengine_host.summarizer import SummarizerService
from ctxengine_host.tokens import TokenCounter
from ctxengine_lcm.engine import LcmEngine

#: The backends a ``database`` runs on.
BACKENDS = ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]

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


def record_searches(engine: LcmEngine, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The full-text expressions ``engine``'s store is asked to search, in order (the
    searches still run)."""
    searched: list[str] = []
    search = engine.store.search_fulltext_many

    def recorded(searches):
        searched.extend(s.fts_query for s in searches)
        return search(searches)

    monkeypatch.setattr(engine.store, "search_fulltext_many", recorded)
    return searched


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


def new_database(request: pytest.FixtureRequest, backend: str, directory: Path) -> str:
    """A SQLite file in ``directory``, or the URL of a fresh, migrated PostgreSQL schema."""
    if backend == "sqlite":
        return str(directory / "lcm.db")
    return fresh_schema_url(request.getfixturevalue("pg_database"))


def release(database: str) -> None:
    """Close this process's pool for ``database`` (schemas per test must not pile up
    connections); the engines of other, wider-scoped fixtures keep theirs."""
    if is_postgres_url(database):
        close_pools(parse_url(database))


@pytest.fixture(params=BACKENDS)
def database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """Where one test's LCM history lives: ``[engines.lcm] database``, on each backend."""
    url = new_database(request, request.param, tmp_path)
    yield url
    release(url)


def check_invariants(database: Path | str) -> dict[str, int]:
    """Check the DAG of every conversation with plain SQL (independent of the store code),
    in a SQLite file or a PostgreSQL schema (``tests/pg/invariants.py``).

    Every stored message is reachable from its conversation's active context exactly once,
    in sequence order; every summary exactly once; running totals match the items.
    Returns counts for the caller's own assertions.
    """
    if is_postgres_url(str(database)):
        with pg_connect(str(database)) as conn:
            return check_lcm_invariants(conn)
    conn = sqlite3.connect(str(database))
    try:
        return check_lcm_invariants(conn, prefix="", mark="?")
    finally:
        conn.close()


def query(database: str, sql: str, params: tuple = ()) -> list[tuple]:
    """The rows of ``sql`` on either backend; written for PostgreSQL (``lcm_`` tables,
    ``%s`` marks), translated for SQLite (no prefix, ``?`` marks)."""
    if is_postgres_url(database):
        with pg_connect(database) as conn:
            return conn.execute(sql, params).fetchall()
    conn = sqlite3.connect(database)
    try:
        return conn.execute(sql.replace("lcm_", "").replace("%s", "?"), params).fetchall()
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
