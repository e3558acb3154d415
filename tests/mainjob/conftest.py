"""Shared helpers for the main-job tests: the CLI in a subprocess, the committed samples."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SESSIONS = ROOT / "examples" / "sessions"
SHORT = SESSIONS / "short-60.jsonl"
LONG = SESSIONS / "long-2000.jsonl.gz"


def run_cli(*args: str, env: dict[str, str] | None = None, timeout: float = 120):
    """``ctxengine ARGS`` in a fresh interpreter; returns the CompletedProcess."""
    return subprocess.run(
        [sys.executable, "-m", "ctxengine_host.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
        cwd=ROOT,
    )


def run_json(*args: str, env: dict[str, str] | None = None) -> dict:
    """``ctxengine ARGS --json``, asserting success; the decoded document."""
    result = run_cli(*args, "--json", env=env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def isolated_env(home: Path) -> dict[str, str]:
    """User dirs and quarantine file under ``home`` (for session-scoped fixtures, which run
    before the suite's per-test isolation)."""
    return {
        "XDG_CONFIG_HOME": str(home / "config"),
        "XDG_DATA_HOME": str(home / "data"),
        "CTXENGINE_DATA_DIR": str(home / "data" / "ctxengine"),
        "CTXENGINE_QUARANTINE_FILE": str(home / "data" / "quarantine.jsonl"),
        "CTXENGINE_ENGINE": "",
        "CTXENGINE_CONFIG": "",
        "CTXENGINE_PLUGINS_DIR": str(home / "plugins"),
    }


@pytest.fixture(scope="session")
def short_replay(tmp_path_factory) -> dict:
    """The short sample replayed once on the default engine (shared by several tests)."""
    home = tmp_path_factory.mktemp("replay-home")
    return run_json("replay", str(SHORT), env=isolated_env(home))
