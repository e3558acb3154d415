"""LangChain create_agent middleware and LangGraph pre_model_hook, through ChatOpenAI
against a scripted server on 127.0.0.1, with legacy and lcm selected by the slot."""

from __future__ import annotations

import pytest

from .runner import run_scenario


@pytest.mark.parametrize("engine", ["legacy", "lcm"])
def test_langchain_and_langgraph_agents_run_on_the_engines_context(engine, tmp_path):
    result = run_scenario("langchain_agent.py", engine, tmp_path)
    assert result["engine"] == engine
    for agent in ("create_agent", "create_react_agent", "create_agent_async"):
        assert result[agent]["compactions"] >= 1
        assert bool(result[agent]["engine_tools"]) == (engine == "lcm")
