"""An OpenAI Agents SDK agent over an EngineSession (session + model-input filter), through
Runner.run and OpenAIChatCompletionsModel against a scripted server on 127.0.0.1.

Usage: python openai_agents_agent.py STORE_PATH  (the engine comes from CTXENGINE_ENGINE)
"""

from __future__ import annotations

import asyncio
import json
import sys

from agents import (
    Agent,
    OpenAIChatCompletionsModel,
    RunConfig,
    Runner,
    function_tool,
    set_tracing_disabled,
)
from common import CONTEXT_LENGTH, engine_answer, host_kwargs, report, require_stored, tool_output
from openai import AsyncOpenAI
from scripted_openai import Script, ScriptedOpenAI, normalize

from ctxengine_host.integrations.openai_agents import EngineSession
from ctxengine_host.runtime.aio import AsyncContextHost

SYSTEM = "You fix flaky tests."
PROMPTS = [f"question {i}: why is CI red?" for i in range(5)]


@function_tool
def read_log(turn: int) -> str:
    """Read the build log of one run."""
    return tool_output(turn)


async def main(store_path: str) -> None:
    set_tracing_disabled(True)
    # The async runtime: the SDK's loop drives the session, engine calls run off the loop.
    async_host = await AsyncContextHost(None, **host_kwargs(store_path)).start()
    host = async_host.host
    memory = EngineSession(await async_host.open_session("agents-chat"))
    engine_tools = [t.name for t in memory.tools()]
    # Three logs read per question: tool loops inside one run, compacted by the filter.
    script = Script(engine_tools[0] if engine_tools else None, reads_per_question=3)
    with ScriptedOpenAI(script) as server:
        client = AsyncOpenAI(base_url=server.base_url, api_key="sk-x", max_retries=0)
        agent = Agent(
            name="fixer",
            instructions=SYSTEM,
            model=OpenAIChatCompletionsModel(model="gpt-4o", openai_client=client),
            tools=[read_log, *memory.tools()],
        )
        config = RunConfig(call_model_input_filter=memory.call_model_input_filter)
        for prompt in PROMPTS:
            result = await Runner.run(agent, prompt, session=memory, run_config=config)
        received = server.requests
    requests = memory.bridge.requests
    assert len(received) == len(requests), (len(received), len(requests))
    for body, request in zip(received, requests, strict=True):
        got, want = normalize(body["messages"]), normalize(request.messages)
        assert got == want, f"the server got\n{got}\nthe engine assembled\n{want}"
        assert request.estimated_tokens <= CONTEXT_LENGTH, request.estimated_tokens
    shrank_mid_run = [
        i
        for i in range(1, len(received))
        if received[i]["messages"][-1]["role"] == "tool"
        and len(received[i]["messages"]) < len(received[i - 1]["messages"])
    ]
    assert shrank_mid_run, "no model input inside a tool loop was compacted"
    compactions = sum(1 for r in memory.bridge.reports for e in r.compactions if e.compacted)
    assert compactions >= 1, "no compaction ran"
    assert memory.bridge.fallbacks == 0
    assert result.final_output == f"answer {script.calls}"
    needles = [*PROMPTS, *(f"fact-{i}:" for i in script.logs), f"answer {script.calls}"]
    require_stored(host, "agents-chat", needles)
    if engine_tools:
        assert script.engine_called, "the scripted model never called the engine tool"
        payload = json.loads(engine_answer(host, "agents-chat", "engine_1"))
        assert payload["results"] and "error" not in payload, payload
    items = await memory.get_items()
    assert items and items[-1]["content"][0]["text"] == f"answer {script.calls}"
    await async_host.close()
    report(
        {
            "engine": host.engine_name,
            "model_calls": script.calls,
            "compactions": compactions,
            "compacted_mid_run": len(shrank_mid_run),
            "engine_tools": engine_tools,
        }
    )


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
