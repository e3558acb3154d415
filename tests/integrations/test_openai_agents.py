"""OpenAI Agents SDK: EngineSession (session + model-input filter) through Runner.run and
OpenAIChatCompletionsModel against a scripted server on 127.0.0.1, legacy and lcm."""

from __future__ import annotations

import pytest

from .runner import run_scenario


@pytest.mark.parametrize("engine", ["legacy", "lcm"])
def test_an_agents_sdk_agent_runs_on_the_engines_context(engine, tmp_path):
    result = run_scenario("openai_agents_agent.py", engine, tmp_path)
    assert result["engine"] == engine
    assert result["compactions"] >= 1
    assert result["compacted_mid_run"] >= 1  # the filter compacts tool loops inside a run
    assert bool(result["engine_tools"]) == (engine == "lcm")
