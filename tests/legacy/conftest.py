"""Fixtures for the legacy engine: a real EngineContext over the host's counter and summarizer."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from typing import Any

import pytest

from ctxengine_host.contract.context import EngineContext
from ctxengine_host.runtime.validity import sequence_problems
from ctxengine_host.summarizer import SummarizerService
from ctxengine_host.tokens import TokenCounter
from ctxengine_legacy import LegacyConfig, LegacyEngine

Message = dict[str, Any]


@pytest.fixture(scope="session")
def counter() -> TokenCounter:
    return TokenCounter()


@pytest.fixture
def service(counter: TokenCounter) -> SummarizerService:
    return SummarizerService(None, counter)


@pytest.fixture
def make_engine(counter, service, tmp_path) -> Callable[..., LegacyEngine]:
    """Build a legacy engine with a 32k window; ``summarize`` replaces the service's call."""

    def build(
        window: int = 32768, summarize: Callable[..., Any] | None = None, **config: Any
    ) -> LegacyEngine:
        context = EngineContext(
            engine_name="legacy",
            data_dir=tmp_path / "legacy",
            count_tokens=counter.count_any,
            summarize=summarize
            or (
                lambda content, target_tokens, focus_topic=None, previous=None: service.summarize(
                    content, target_tokens, focus_topic=focus_topic, previous=previous
                )
            ),
        )
        engine = LegacyEngine(config=LegacyConfig(**config), context=context)
        engine.update_model("gpt-4", window)
        return engine

    return build


def assert_valid(messages: list[Message]) -> None:
    """The host's own validity rules, and no two user messages in a row."""
    assert sequence_problems(messages) == []
    roles = [m["role"] for m in messages]
    assert not any(a == b == "user" for a, b in itertools.pairwise(roles))


class Conversation:
    """Builds an OpenAI-format coding-agent conversation turn by turn."""

    def __init__(self, system: str = "You are a careful coding agent.") -> None:
        self.messages: list[Message] = [{"role": "system", "content": system}]
        self._calls = 0

    def user(self, text: str) -> Conversation:
        self.messages.append({"role": "user", "content": text})
        return self

    def assistant(self, text: str) -> Conversation:
        self.messages.append({"role": "assistant", "content": text})
        return self

    def tool_round(self, calls: list[tuple[str, dict[str, Any], str]]) -> Conversation:
        """One assistant message calling several tools, then their results."""
        entries = []
        for name, args, _ in calls:
            self._calls += 1
            entries.append(
                {
                    "id": f"call_{self._calls}",
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps(args)},
                }
            )
        self.messages.append({"role": "assistant", "content": None, "tool_calls": entries})
        for entry, (_, _, output) in zip(entries, calls, strict=True):
            self.messages.append({"role": "tool", "tool_call_id": entry["id"], "content": output})
        return self


def filler_log(seed: int, lines: int = 60) -> str:
    """Log-like tool output without planted facts."""
    return "\n".join(
        f"12:{(seed + i) % 60:02d}:{i % 60:02d} INFO worker.step{(seed * 7 + i) % 13} "
        f"processed batch {i % 97} of queue jobs in {(i * 13) % 50} ms"
        for i in range(lines)
    )


def long_session(turns: int, facts: dict[int, str] | None = None) -> list[Message]:
    """A session of ``turns`` user turns with tool rounds; ``facts`` are user statements."""
    facts = facts or {}
    convo = Conversation()
    for turn in range(turns):
        ask = facts.get(turn, f"Please look at step {turn} of the worker pipeline.")
        convo.user(ask)
        convo.tool_round(
            [
                ("read_file", {"path": f"src/worker/step_{turn % 9}.py"}, filler_log(turn, 40)),
                ("run_tests", {"target": f"tests/test_step_{turn % 9}.py"}, filler_log(turn + 1)),
            ]
        )
        convo.assistant(f"Step {turn} looks fine; the queue drains as expected.")
    return convo.messages
