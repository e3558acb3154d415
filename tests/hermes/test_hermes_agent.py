"""Our engines inside the real Hermes agent (hermes-agent from PyPI, framework env ``hermes``).

``ctxengine hermes install ENGINE`` writes the plugin under a temporary HERMES_HOME;
Hermes's own ``AIAgent`` then runs several turns against a scripted
OpenAI-compatible server on 127.0.0.1. Hermes's log must show our engine in use
(not its fallback to the built-in compressor), its compaction must have run,
a ``lcm_grep`` call from the model must come back answered from our store, no
request may exceed the window, and nothing may leave the loopback interface.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path

from tests.support.frameworks import framework_python
from tests.support.network import assert_no_escape, guarded_env

from .scripted_server import ScriptedServer

WINDOW = 65_536  # Hermes refuses windows under 64K
TURNS = 9
DRIVER = Path(__file__).with_name("agent_driver.py")


def run_agent(tmp_path: Path, engine: str) -> tuple[dict, str, ScriptedServer, Path]:
    python = framework_python("hermes")
    home = tmp_path / "hermes-home"
    home.mkdir()
    env = guarded_env(tmp_path)
    env.update(HERMES_HOME=str(home), HOME=str(tmp_path))
    env.pop("CTXENGINE_DATA_DIR", None)  # the plugin keeps its data under HERMES_HOME
    install = subprocess.run(
        [str(python), "-m", "ctxengine_host.cli", "hermes", "install", engine],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert install.returncode == 0, install.stderr
    config = home / "config.yaml"
    config.write_text(config.read_text() + f"model:\n  context_length: {WINDOW}\n")
    out = tmp_path / "out.json"
    with ScriptedServer() as server:
        proc = subprocess.run(
            [str(python), str(DRIVER), server.base_url, str(TURNS), str(out)],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            cwd=tmp_path,
        )
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert_no_escape(env)
    return json.loads(out.read_text()), proc.stderr, server, home


def assert_engine_used(engine: str, report: dict, log: str) -> None:
    assert f"Plugin 'ctxengine-{engine}' registered context engine: {engine}" in log
    assert f"Using context engine: {engine}" in log
    assert "falling back to built-in compressor" not in log
    assert (report["engine_class"], report["engine_name"]) == ("FrameworkEngineAdapter", engine)


def test_lcm_runs_inside_the_hermes_agent_loop(tmp_path):
    report, log, server, home = run_agent(tmp_path, "lcm")
    assert_engine_used("lcm", report, log)
    assert report["compression_count"] >= 1 and "context compression done" in log
    chats = server.requests
    assert max(r["tokens"] for r in chats) <= WINDOW
    # The model's lcm_grep call was dispatched by Hermes and answered from our store,
    # after the compaction had folded the planted fact into a summary.
    [answer] = [m for m in report["tool_messages"] if m.get("tool_call_id")]
    assert "7141-quartz" in answer["content"] and '"covered_by": "sum_' in answer["content"]
    assert report["finals"][-1].startswith("Found it")  # the model got the answer back
    # Every message the host handed over is stored once (the compaction boundary and
    # the summary coming back are not new messages).
    [database] = list((home / "ctxengine").rglob("lcm.db"))
    with sqlite3.connect(database) as db:
        rows = db.execute("SELECT role, content FROM messages ORDER BY seq").fetchall()
    users = [c for r, c in rows if r == "user"]
    assert len(users) == len(set(users)) == TURNS
    assert not any(c.startswith("[Summary sum_") for _, c in rows)


def test_legacy_runs_inside_the_hermes_agent_loop(tmp_path):
    report, log, server, _ = run_agent(tmp_path, "legacy")
    assert_engine_used("legacy", report, log)
    assert report["compression_count"] >= 1 and "context compression done" in log
    chats = server.requests
    assert max(r["tokens"] for r in chats) <= WINDOW
    assert not report["tool_messages"]  # legacy has no tools: the model called none
