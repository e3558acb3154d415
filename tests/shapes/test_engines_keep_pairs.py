"""Both engines, compacting long tool loops in the Anthropic and Responses shapes, send
requests whose calls and results still pair the way those APIs demand."""

from __future__ import annotations

import pytest
from pg.fixtures import fresh_schema_url

from ctxengine_host.config import CompressionSection, CtxConfig, LoadedConfig
from ctxengine_host.runtime.host import ContextHost

from .test_anthropic_shape import assistant_turn, results
from .test_responses_shape import call, output, reasoning

USAGE = {"input_tokens": 10, "output_tokens": 2}
FILLER = " ".join(f"line{n} of a long tool output" for n in range(150))


def anthropic_problems(messages: list[dict]) -> list[str]:
    """Anthropic's rule: a tool_use is answered in the very next user message, and a
    tool_result answers a tool_use of the message right before it."""
    problems = []
    for i, message in enumerate(messages):
        blocks = message["content"] if isinstance(message["content"], list) else []
        if message["role"] == "assistant":
            uses = {b["id"] for b in blocks if b["type"] == "tool_use"}
            nxt = messages[i + 1]["content"] if i + 1 < len(messages) else []
            answered = {
                b["tool_use_id"] for b in nxt if isinstance(b, dict) and b["type"] == "tool_result"
            }
            if uses - answered:
                problems.append(f"{i}: unanswered {sorted(uses - answered)}")
        else:
            prev = messages[i - 1]["content"] if i else []
            used = {b["id"] for b in prev if isinstance(b, dict) and b["type"] == "tool_use"}
            for b in blocks:
                if b["type"] == "tool_result" and b["tool_use_id"] not in used:
                    problems.append(f"{i}: orphan result {b['tool_use_id']}")
    return problems


def responses_problems(items: list[dict]) -> list[str]:
    called: set[str] = set()
    answered: set[str] = set()
    problems = []
    for item in items:
        if item.get("type") == "function_call":
            called.add(item["call_id"])
        elif item.get("type") == "function_call_output":
            if item["call_id"] not in called:
                problems.append(f"orphan output {item['call_id']}")
            answered.add(item["call_id"])
    return problems + [f"unanswered {c}" for c in sorted(called - answered)]


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def backend(request, tmp_path) -> dict:
    """Where the transcripts and LCM's history live: SQLite files, or fresh PG schemas."""
    if request.param == "sqlite":
        return {"store": tmp_path / "t.db", "lcm": str(tmp_path / "lcm.db")}
    database = request.getfixturevalue("pg_database")
    return {"store": fresh_schema_url(database), "lcm": fresh_schema_url(database)}


def host_for(engine: str, tmp_path, backend: dict) -> ContextHost:
    cfg = CtxConfig(compression=CompressionSection(hook_timeout_seconds=30))
    cfg.context.reserve_output_tokens = 256
    cfg.engines = {"lcm": {"database": backend["lcm"]}}
    return ContextHost(
        engine,
        model="gpt-4",
        context_length=6_000,
        config=LoadedConfig(config=cfg),
        store_path=backend["store"],
        data_dir=tmp_path / "data",
        observers=[],
    )


def big(message: dict) -> dict:
    """A tool-result message whose outputs are long."""
    blocks = [dict(b) for b in message["content"]]
    for b in blocks:
        if b["type"] == "tool_result":
            b["content"] = f"{b['content']} {FILLER}"
    return {**message, "content": blocks}


@pytest.mark.parametrize("engine", ["legacy", "lcm"])
def test_anthropic_pairs_survive_compaction(engine, tmp_path, backend):
    with (
        host_for(engine, tmp_path, backend) as host,
        host.open_session("s", shape="anthropic") as session,
    ):
        session.add_messages([{"role": "user", "content": "refactor everything"}])
        compacted = False
        for n in range(30):
            request = session.build_request()
            compacted = compacted or request.compacted or request.selected
            assert anthropic_problems(request.provider_kwargs()["messages"]) == []
            session.record_response(assistant_turn(n), USAGE)
            session.record_tool_results([big(results(n))])
        final = session.build_request()
        sent = final.provider_kwargs()["messages"]
        assert anthropic_problems(sent) == []
        assert len(session.messages()) < 30 * 4 or compacted
        assert any(
            b.get("type") == "thinking"
            for m in sent
            if isinstance(m["content"], list)
            for b in m["content"]
        ), "the newest tool turns go back with their thinking blocks"


@pytest.mark.parametrize("engine", ["legacy", "lcm"])
def test_responses_pairs_survive_compaction(engine, tmp_path, backend):
    with (
        host_for(engine, tmp_path, backend) as host,
        host.open_session("s", shape="responses") as session,
    ):
        session.add_messages([{"role": "user", "content": "refactor everything"}])
        for n in range(30):
            request = session.build_request()
            assert responses_problems(request.provider_kwargs()["input"]) == []
            session.record_response([reasoning(n), call(n)], USAGE)
            session.record_tool_results([{**output(n), "output": f"{n} {FILLER}"}])
        sent = session.build_request().provider_kwargs()["input"]
        assert responses_problems(sent) == []
        kinds = [i.get("type") for i in sent]
        # a reasoning item goes back right before its call
        for k, kind in enumerate(kinds):
            if kind == "reasoning":
                assert kinds[k + 1] == "function_call"
