"""PydanticAI: a real Agent (FunctionModel) over a ctxengine session, legacy and lcm."""

from __future__ import annotations

import subprocess

import pytest

from tests.support.frameworks import REPO, framework_python
from tests.support.network import assert_no_escape, guarded_env

from .runner import ENV_NAME, run_scenario


@pytest.mark.parametrize("engine", ["legacy", "lcm"])
def test_a_pydantic_ai_agent_runs_on_the_engines_context(engine, tmp_path):
    result = run_scenario("pydantic_ai_agent.py", engine, tmp_path)
    assert result["engine"] == engine
    assert result["compactions"] >= 1
    if engine == "lcm":
        assert result["engine_tool_answered"]


def test_the_pydantic_ai_example_runs_offline(tmp_path):
    python = framework_python(ENV_NAME)
    env = guarded_env(tmp_path)
    env["CTXENGINE_ENGINE"] = "lcm"
    env["CTXENGINE_DATA_DIR"] = str(tmp_path / "data")
    example = REPO / "examples" / "integrations" / "pydantic_ai_example.py"
    done = subprocess.run(
        [str(python), str(example)], env=env, capture_output=True, text=True, timeout=120
    )
    assert_no_escape(env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "engine lcm: 8 messages stored" in done.stdout


def test_an_engine_that_breaks_mid_conversation_never_breaks_the_agent(tmp_path):
    result = run_scenario("pydantic_ai_failing_engine.py", "legacy", tmp_path)
    assert (result["mode"], result["engine"]) == ("fallback", "legacy")
    assert result["output"].startswith("answer after")
