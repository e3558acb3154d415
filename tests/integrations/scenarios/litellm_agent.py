"""An agent loop on litellm.completion against a scripted server on 127.0.0.1: the host's
budget from LiteLLM's model map and tokenizer, summaries through the litellm backend.

Usage: python litellm_agent.py STORE_PATH  (the engine comes from CTXENGINE_ENGINE)
"""

from __future__ import annotations

import json
import os
import sys

import litellm
from common import RESERVE_OUTPUT_TOKENS, engine_answer, report, require_stored, tool_output
from scripted_openai import Script, ScriptedOpenAI, normalize

from ctxengine_host.config import SummarizerSection, load_config
from ctxengine_host.integrations.litellm import LiteLLMTokenCounter, context_window, litellm_budget
from ctxengine_host.runtime.host import ContextHost

MODEL = "openai/scripted-small"
WINDOW = 3000
SUMMARY_MARK = "You condense an agent conversation"
PROMPTS = [f"question {i}: why is CI red?" for i in range(5)]


def main(store_path: str) -> None:
    assert os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] == "True"
    assert context_window("gpt-4o") == 128_000  # from the bundled map, never fetched
    litellm.register_model(
        {
            MODEL: {
                "max_input_tokens": WINDOW,
                "max_output_tokens": 256,
                "mode": "chat",
                "litellm_provider": "openai",
                "input_cost_per_token": 0.0,
                "output_cost_per_token": 0.0,
            }
        }
    )
    budget = litellm_budget(MODEL)
    assert budget["context_length"] == WINDOW
    assert isinstance(budget["counter"], LiteLLMTokenCounter)

    summaries: list[dict] = []
    script = Script(None)

    def respond(body: dict) -> dict:
        if SUMMARY_MARK in str(body["messages"][0].get("content")):
            summaries.append(body)
            return {"content": f"- summary {len(summaries)}: the flaky tests are the retry ones"}
        return script(body)

    with ScriptedOpenAI(respond) as server:
        config = load_config(None)
        config.config.context.reserve_output_tokens = RESERVE_OUTPUT_TOKENS
        config.config.summarizer = SummarizerSection(
            backend="litellm",
            model=MODEL,
            api_base=server.base_url,
            api_key_env="OPENAI_API_KEY",
            max_retries=0,
        )
        host = ContextHost(None, config=config, store_path=store_path, **budget)
        assert host.summarizer.backend_name == "litellm"
        session = host.open_session("litellm-chat")
        engine_tools = [t["function"]["name"] for t in session.tools]
        script.engine_tool = engine_tools[0] if engine_tools else None
        built = []
        for prompt in PROMPTS:
            session.add_user_message(prompt)
            while True:
                request = session.build_request()
                built.append(request)
                response = litellm.completion(
                    model=MODEL,
                    messages=request.messages,
                    tools=request.tools or None,
                    api_base=server.base_url,
                    api_key="sk-x",
                )
                message = response.choices[0].message.model_dump(exclude_none=True)
                message = {
                    k: v for k, v in message.items() if k in ("role", "content", "tool_calls")
                }
                usage = response.usage.model_dump()
                session.record_response(message, usage)
                calls = message.get("tool_calls") or []
                if not calls:
                    break
                results = []
                for call in calls:
                    name = call["function"]["name"]
                    if name in engine_tools:
                        output = session.call_engine_tool(name, call["function"]["arguments"])
                    else:
                        output = tool_output(json.loads(call["function"]["arguments"])["turn"])
                    results.append({"role": "tool", "tool_call_id": call["id"], "content": output})
                session.record_tool_results(results)
            session.finish_turn()
        agent_requests = [b for b in server.requests if b not in summaries]
    assert len(agent_requests) == len(built)
    for body, request in zip(agent_requests, built, strict=True):
        assert normalize(body["messages"]) == normalize(request.messages)
        assert request.estimated_tokens <= WINDOW, request.estimated_tokens
    status = session.status()
    compactions = status["engine_status"].get("compression_count", 0)
    assert compactions >= 1 or summaries, "no compaction ran"
    needles = [*PROMPTS, *(f"fact-{i}:" for i in script.logs), f"answer {script.calls}"]
    require_stored(host, "litellm-chat", needles)
    if script.engine_tool:
        assert script.engine_called
        payload = json.loads(engine_answer(host, "litellm-chat", "engine_1"))
        assert "error" not in payload, payload
    if host.engine_name == "lcm":
        assert summaries, "lcm summarized without the litellm backend"
    session.end()
    host.close()
    report(
        {
            "engine": host.engine_name,
            "model_calls": script.calls,
            "summaries_via_litellm": len(summaries),
            "compactions": compactions,
            "engine_tools": engine_tools,
        }
    )


if __name__ == "__main__":
    main(sys.argv[1])
