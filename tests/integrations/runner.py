"""Run one framework scenario (tests/integrations/scenarios) in the framework env, guarded."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from tests.support.frameworks import framework_python
from tests.support.network import assert_no_escape, guarded_env

SCENARIOS = Path(__file__).parent / "scenarios"
#: ``chat_server.py``, the scripted model's HTTP side, imported by the scenarios.
SUPPORT = Path(__file__).parents[1] / "support"
#: One environment holds every framework the adapters support (scripts/framework-envs/agents.txt).
ENV_NAME = "agents"


def run_scenario(script: str, engine: str, tmp_path: Path, timeout: float = 120) -> dict[str, Any]:
    """Run ``scenarios/SCRIPT`` with ``engine`` chosen by the slot; its JSON report."""
    python = framework_python(ENV_NAME)
    env = guarded_env(tmp_path)
    env["PYTHONPATH"] = os.pathsep.join([str(SCENARIOS), str(SUPPORT), env["PYTHONPATH"]])
    env["CTXENGINE_ENGINE"] = engine
    env["CTXENGINE_DATA_DIR"] = str(tmp_path / "data")
    env["CTXENGINE_QUARANTINE_FILE"] = str(tmp_path / "quarantine.jsonl")
    env["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # LiteLLM never fetches its model map
    env["OPENAI_API_KEY"] = "sk-scripted-test"  # frameworks insist on a key; nothing checks it
    env["OPENAI_AGENTS_DISABLE_TRACING"] = "1"
    store = tmp_path / f"{engine}.db"
    done = subprocess.run(
        [str(python), str(SCENARIOS / script), str(store)],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=tmp_path,
    )
    assert_no_escape(env)
    assert done.returncode == 0, f"{script} ({engine}) failed:\n{done.stderr[-4000:]}"
    return json.loads(done.stdout.strip().splitlines()[-1])
