"""LangChain create_agent (middleware) and LangGraph create_react_agent (pre_model_hook)
over ctxengine sessions, against a scripted OpenAI-compatible server, through ChatOpenAI.

Usage: python langchain_agent.py STORE_PATH  (the engine comes from CTXENGINE_ENGINE)
"""

from __future__ import annotations

import asyncio
import json
import sys
import warnings

from common import CONTEXT_LENGTH, engine_answer, make_host, report, require_stored, tool_output
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from scripted_openai import Script, ScriptedOpenAI, normalize

from ctxengine_host.integrations.langchain import EngineContext

SYSTEM = "You fix flaky tests."
PROMPTS = [f"question {i}: why is CI red?" for i in range(5)]


@tool
def read_log(turn: int) -> str:
    """Read the build log of one run."""
    return tool_output(turn)


def drive(
    host, session_id: str, build, system_prompt: str | None = None, use_async: bool = False
) -> dict:
    session = host.open_session(session_id, system_prompt=system_prompt)
    context = EngineContext(session)
    engine_tools = [t.name for t in context.tools()]
    script = Script(engine_tools[0] if engine_tools else None)
    with ScriptedOpenAI(script) as server:
        model = ChatOpenAI(model="gpt-4o", base_url=server.base_url, api_key="sk-x", max_retries=0)
        agent = build(model, [read_log, *context.tools()], context)
        state = {"messages": []}
        for prompt in PROMPTS:
            update = {"messages": [*state["messages"], HumanMessage(prompt)]}
            state = asyncio.run(agent.ainvoke(update)) if use_async else agent.invoke(update)
        context.finish(state)
        received = server.requests
    requests = context.bridge.requests
    assert len(received) == len(requests), (len(received), len(requests))
    for body, request in zip(received, requests, strict=True):
        got, want = normalize(body["messages"]), normalize(request.messages)
        assert got == want, f"{session_id}: the server got\n{got}\nthe engine assembled\n{want}"
        assert request.estimated_tokens <= CONTEXT_LENGTH, request.estimated_tokens
    assert len(state["messages"]) > max(len(b["messages"]) for b in received)  # request-only
    compactions = sum(1 for r in context.bridge.reports for e in r.compactions if e.compacted)
    assert compactions >= 1, f"{session_id}: no compaction ran"
    assert context.bridge.fallbacks == 0
    last_answer = f"answer {script.calls}"
    needles = [*PROMPTS, *(f"fact-{i}:" for i in script.logs), last_answer]
    require_stored(host, session_id, needles)
    if engine_tools:
        assert script.engine_called, f"{session_id}: the scripted model never called the tool"
        payload = json.loads(engine_answer(host, session_id, "engine_1"))
        assert payload["results"] and "error" not in payload, payload
    session.end()
    return {"model_calls": script.calls, "compactions": compactions, "engine_tools": engine_tools}


def build_create_agent(model, tools, context):
    return create_agent(model, tools=tools, system_prompt=SYSTEM, middleware=[context.middleware()])


def build_react_agent(model, tools, context):
    with warnings.catch_warnings():
        warnings.simplefilter(
            "ignore"
        )  # create_react_agent is deprecated in favour of create_agent
        from langgraph.prebuilt import create_react_agent

        # The system prompt lives in the session (counted in the budget), not in prompt=.
        return create_react_agent(model, tools, pre_model_hook=context.pre_model_hook)


def main(store_path: str) -> None:
    host = make_host(store_path)
    result = {
        "engine": host.engine_name,
        "create_agent": drive(host, "lc-create-agent", build_create_agent),
        "create_react_agent": drive(host, "lg-react-agent", build_react_agent, SYSTEM),
        # ainvoke: the middleware's awrap_model_call, the engine work off the event loop.
        "create_agent_async": drive(host, "lc-async", build_create_agent, use_async=True),
    }
    host.close()
    report(result)


if __name__ == "__main__":
    main(sys.argv[1])
