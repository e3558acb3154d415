"""PydanticAI: a real Agent (FunctionModel) over a ctxengine session, legacy and lcm."""

from __future__ import annotations

import pytest

from .runner import run_scenario


@pytest.mark.parametrize("engine", ["legacy", "lcm"])
def test_a_pydantic_ai_agent_runs_on_the_engines_context(engine, tmp_path):
    result = run_scenario("pydantic_ai_agent.py", engine, tmp_path)
    assert result["engine"] == engine
    assert result["compactions"] >= 1
    if engine == "lcm":
        assert result["engine_tool_answered"]
