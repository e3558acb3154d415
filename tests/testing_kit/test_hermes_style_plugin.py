"""A real-style Hermes plugin runs unchanged: selected by either name, never quarantined."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from ctxengine_host.testing import samples

from .hermes_style_plugin import DIRECTORY, ENGINE_NAME, TOOL, write_hermes_style_plugin


@pytest.fixture
def env(tmp_path):
    plugins = tmp_path / "plugins"
    write_hermes_style_plugin(plugins)
    return {
        **os.environ,
        "CTXENGINE_PLUGINS_DIR": str(plugins),
        "CTXENGINE_DATA_DIR": str(tmp_path / "data"),
        "CTXENGINE_QUARANTINE_FILE": str(tmp_path / "quarantine.jsonl"),
    }


def ctxengine(env, *args, cwd):
    return subprocess.run(
        [sys.executable, "-m", "ctxengine_host.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
    )


def replay(env, tmp_path, engine):
    session = tmp_path / "session.jsonl"
    if not session.exists():
        messages = samples.conversation(30, marker="recall")
        session.write_text("".join(json.dumps(m) + "\n" for m in messages))
    proc = ctxengine(
        env,
        "replay",
        str(session),
        "--engine",
        engine,
        "--context-length",
        "6000",
        "--json",
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout), proc.stderr


@pytest.mark.parametrize("selected_as", [DIRECTORY, ENGINE_NAME])
def test_replay_runs_the_plugin_unchanged_by_either_name(env, tmp_path, selected_as):
    report, stderr = replay(env, tmp_path, selected_as)
    engine = report["engine"]
    assert engine["name"] == DIRECTORY and not engine["fallback"], (engine, stderr)
    assert engine["tools"] == [TOOL]
    summary = report["summary"]
    assert summary["quarantines"] == 0 and summary["turns_over_budget"] == 0
    assert summary["compactions"] >= 1
    assert summary["summary_tokens_total"] > 0  # its call_llm reached our summarizer
    assert (
        not (tmp_path / "quarantine.jsonl").exists()
        or not (tmp_path / "quarantine.jsonl").read_text().strip()
    )


def test_engines_check_records_the_engine_name_as_an_alias(env, tmp_path):
    proc = ctxengine(env, "engines", "--check", "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    [row] = [r for r in json.loads(proc.stdout)["engines"] if r["name"] == DIRECTORY]
    assert row["check"] == {"ok": True, "problems": []}
    assert ENGINE_NAME in row["aliases"] and "hermes-recall-plugin" in row["aliases"]
    listing = ctxengine(env, "engines", cwd=tmp_path).stdout
    assert f"also selected as: hermes-recall-plugin, {ENGINE_NAME}" in listing


def test_a_plugin_engine_named_like_ours_is_selected_by_its_directory(tmp_path):
    plugins = tmp_path / "plugins"
    directory = write_hermes_style_plugin(plugins)
    engine_py = directory / "engine.py"
    engine_py.write_text(engine_py.read_text().replace('return "recall"', 'return "lcm"'))
    directory.rename(plugins / "hermes-lcm")
    env = {
        **os.environ,
        "CTXENGINE_PLUGINS_DIR": str(plugins),
        "CTXENGINE_DATA_DIR": str(tmp_path / "data"),
        "CTXENGINE_QUARANTINE_FILE": str(tmp_path / "quarantine.jsonl"),
    }
    checked = ctxengine(env, "engines", "--check", "--json", cwd=tmp_path)
    rows = {r["name"]: r for r in json.loads(checked.stdout)["engines"]}
    assert rows["lcm"]["source"] == "entry-point" and rows["hermes-lcm"]["source"] == "directory"
    assert "lcm" not in rows["hermes-lcm"]["aliases"]
    assert any("select this one as 'hermes-lcm'" in w for w in rows["hermes-lcm"]["warnings"])
    theirs, _ = replay(env, tmp_path, "hermes-lcm")
    ours, _ = replay(env, tmp_path, "lcm")
    assert theirs["engine"]["tools"] == [TOOL]
    assert "lcm_grep" in ours["engine"]["tools"]
