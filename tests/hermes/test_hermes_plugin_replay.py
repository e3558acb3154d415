"""A real-style Hermes plugin through ``ctxengine replay`` where hermes-agent 0.19.0 is
installed: its own ABC is used, the current-ABC helpers it lacks are filled in, and
the plugin's ``call_llm`` summaries go to our summarizer (nothing leaves 127.0.0.1)."""

from __future__ import annotations

import json
import subprocess

import pytest

from ctxengine_host.testing import samples
from tests.support.frameworks import framework_python
from tests.support.network import assert_no_escape, guarded_env
from tests.testing_kit.hermes_style_plugin import (
    DIRECTORY,
    ENGINE_NAME,
    TOOL,
    write_hermes_style_plugin,
)


@pytest.mark.parametrize("selected_as", [DIRECTORY, ENGINE_NAME])
def test_plugin_replays_unchanged_under_the_real_framework(tmp_path, selected_as):
    python = framework_python("hermes")
    write_hermes_style_plugin(tmp_path / "plugins")
    session = tmp_path / "session.jsonl"
    messages = samples.conversation(30, marker="recall")
    session.write_text("".join(json.dumps(m) + "\n" for m in messages))
    env = guarded_env(tmp_path)
    env.update(
        CTXENGINE_PLUGINS_DIR=str(tmp_path / "plugins"),
        CTXENGINE_DATA_DIR=str(tmp_path / "data"),
        CTXENGINE_QUARANTINE_FILE=str(tmp_path / "quarantine.jsonl"),
        HERMES_HOME=str(tmp_path / "hermes-home"),
        HOME=str(tmp_path),
    )
    script = (
        "import runpy, sys, agent.context_engine as ce;"
        "assert not getattr(ce, '__ctxengine_shim__', False), 'the real ABC must be used';"
        "sys.argv = ['ctxengine'] + sys.argv[1:];"
        "runpy.run_module('ctxengine_host.cli', run_name='__main__')"
    )
    proc = subprocess.run(
        [
            str(python),
            "-c",
            script,
            "replay",
            str(session),
            "--engine",
            selected_as,
            "--context-length",
            "6000",
            "--json",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    assert_no_escape(env)
    report = json.loads(proc.stdout)
    engine = report["engine"]
    assert engine["name"] == DIRECTORY and not engine["fallback"], engine
    assert engine["tools"] == [TOOL]
    summary = report["summary"]
    assert summary["quarantines"] == 0 and summary["compactions"] >= 1
    assert summary["summary_tokens_total"] > 0  # its call_llm reached our summarizer
