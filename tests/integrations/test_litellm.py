"""LiteLLM: the host's budget from its model map and tokenizer, summaries through
litellm.completion, an agent loop on litellm.completion against a scripted server."""

from __future__ import annotations

import pytest

from .runner import run_scenario


@pytest.mark.parametrize("engine", ["legacy", "lcm"])
def test_an_agent_loop_on_litellm_with_litellm_summaries(engine, tmp_path):
    result = run_scenario("litellm_agent.py", engine, tmp_path)
    assert result["engine"] == engine
    assert result["summaries_via_litellm"] >= 1
    assert bool(result["engine_tools"]) == (engine == "lcm")
