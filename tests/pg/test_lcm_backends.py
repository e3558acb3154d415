"""The LCM engine's backend choice, and the helpers tests/pg drives it with.

The engine and store suites run on both backends in tests/lcm (its ``database``
fixture), the contract kit too; here is what only a PostgreSQL URL does.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from ctxengine_host.config import SummarizerSection
from ctxengine_host.contract.context import EngineContext
from ctxengine_host.summarizer import SummarizerService
from ctxengine_host.tokens import TokenCounter
from ctxengine_lcm.engine import LcmEngine

from .fixtures import fresh_schema_url

COUNTER = TokenCounter("gpt-4")
SUMMARIZER = SummarizerService(SummarizerSection(), COUNTER)


def context(data_dir: Path) -> EngineContext:
    return EngineContext(
        engine_name="lcm",
        data_dir=data_dir,
        count_tokens=COUNTER.count_any,
        summarize=SUMMARIZER.summarize,
    )


def make_engine(database: str, data_dir: Path, session: str = "s1") -> LcmEngine:
    config = {
        "database": database,
        "leaf_chunk_tokens": 1_500,
        "fresh_tail_messages": 8,
        "leaf_target_tokens": 120,
        "condensed_target_tokens": 150,
    }
    engine = LcmEngine(config=config, context=context(data_dir))
    engine.update_model("gpt-4", 8_000)
    engine.on_session_start(session)
    return engine


def exchange(n: int) -> list[dict[str, Any]]:
    filler = " ".join(f"w{n}x{i}" for i in range(60))
    return [
        {"role": "user", "content": f"question {n} about topic{n}: {filler}",
         "message_uid": uuid.uuid4().hex},
        {"role": "assistant", "content": f"answer {n}: fact{n} is value{n}",
         "message_uid": uuid.uuid4().hex},
    ]  # fmt: skip


def drive(engine: LcmEngine, turns: int) -> list[dict[str, Any]]:
    history: list[dict[str, Any]] = [{"role": "system", "content": "You are a coding agent."}]
    for n in range(turns):
        batch = exchange(n)
        history += batch
        engine.ingest("s1", batch)
        result = engine.select_context(history, budget_tokens=6_000)
        if engine.should_compress(result.estimated_tokens):
            engine.compress(history)
    return history


def tool(engine: LcmEngine, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return json.loads(engine.handle_tool_call(name, args))


def test_the_store_opening_dispatches_on_the_url(pg_database, tmp_path):
    url = fresh_schema_url(pg_database)
    engine = make_engine(url, tmp_path)
    try:
        assert type(engine.store).__name__ == "PgLcmStore"
        assert engine.get_status()["store_path"].startswith("postgresql://")
    finally:
        engine.dispose()
    bad = LcmEngine(config={"database": "postgresql://127.0.0.1/db?nonsense=1"})
    with pytest.raises(ValueError, match="nonsense"):
        bad.store  # noqa: B018
