"""A PydanticAI agent (FunctionModel) over a ctxengine session: five runs with tool loops.

Usage: python pydantic_ai_agent.py STORE_PATH  (the engine comes from CTXENGINE_ENGINE)
"""

from __future__ import annotations

import json
import sys

from common import (
    CONTEXT_LENGTH,
    engine_answer,
    make_host,
    report,
    require_stored,
    tool_output,
)
from pydantic_ai import Agent
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from ctxengine_host.contract.messages import strip_persistence_fields
from ctxengine_host.integrations.pydantic_ai import EngineHistory, to_chat

RUNS = 5


def main(store_path: str) -> None:
    host = make_host(store_path)
    session = host.open_session("pydantic-chat")
    history = EngineHistory(session)
    engine_tools = [t.name for t in history.tools()]
    seen: list[list[dict]] = []
    engine_answers: list[str] = []
    state = {"calls": 0}
    logs: list[int] = []

    def model(messages, info: AgentInfo) -> ModelResponse:
        seen.append(to_chat(messages))
        last = messages[-1]
        returns = [p for p in last.parts if isinstance(p, ToolReturnPart)]
        state["calls"] += 1
        turn = len([m for m in seen[-1] if m["role"] == "user"])
        if returns and returns[0].tool_name in engine_tools:
            engine_answers.append(returns[0].model_response_str())
        if not returns:  # a new user prompt: read the log
            return ModelResponse(
                parts=[
                    TextPart(f"reading log {state['calls']}"),
                    ToolCallPart(
                        "read_log", {"turn": state["calls"]}, tool_call_id=f"c{state['calls']}"
                    ),
                ]
            )
        if (
            engine_tools
            and returns[0].tool_name == "read_log"
            and state["calls"] > 6
            and not engine_answers
        ):
            return ModelResponse(
                parts=[
                    ToolCallPart(
                        engine_tools[0], {"pattern": "flaky", "limit": 2}, tool_call_id="engine-1"
                    ),
                ]
            )
        return ModelResponse(parts=[TextPart(f"answer {state['calls']} after {turn} prompts")])

    agent = Agent(
        FunctionModel(model),
        system_prompt="You fix flaky tests.",
        capabilities=[history.capability()],
        tools=history.tools(),
    )

    @agent.tool_plain
    def read_log(turn: int) -> str:
        """Read the build log of one run."""
        logs.append(turn)
        return tool_output(turn)

    result = None
    prompts = [f"question {i}: why is CI red?" for i in range(RUNS)]
    for prompt in prompts:
        result = agent.run_sync(prompt, message_history=result.all_messages() if result else None)
        history.finish_sync(result.all_messages())

    requests = history.bridge.requests
    assert len(requests) == len(seen), (len(requests), len(seen))
    for request, got in zip(requests, seen, strict=True):
        assert got == [strip_persistence_fields(m) for m in request.messages], "model input differs"
        assert request.estimated_tokens <= CONTEXT_LENGTH, request.estimated_tokens
    compactions = sum(1 for r in history.bridge.reports for e in r.compactions if e.compacted)
    assert compactions >= 1, "no compaction ran"
    assert history.bridge.fallbacks == 0
    needles = [*prompts, *(f"fact-{i}:" for i in logs), f"answer {state['calls']} after"]
    require_stored(host, "pydantic-chat", needles)
    if engine_tools:
        assert engine_answers, "the engine tool was never answered"
        payload = json.loads(engine_answer(host, "pydantic-chat", "engine-1"))
        assert payload["results"] and "error" not in payload, payload
    report(
        {
            "engine": host.engine_name,
            "model_calls": state["calls"],
            "compactions": compactions,
            "engine_tools": engine_tools,
            "engine_tool_answered": bool(engine_answers),
            "max_request_tokens": max(r.estimated_tokens for r in requests),
        }
    )
    session.end()
    host.close()


if __name__ == "__main__":
    main(sys.argv[1])
