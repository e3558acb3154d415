"""The opt-in pytest plugin runs the kit on an installed engine named on the command line."""

from __future__ import annotations

import subprocess
import sys


def run_kit(cwd, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "ctxengine_host.testing.plugin",
            *args,
        ],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_kit_on_an_installed_engine_by_name(tmp_path):
    (tmp_path / "test_unrelated.py").write_text("def test_not_collected():\n    assert False\n")
    proc = run_kit(tmp_path, "--ctxengine-engine", "legacy", "--ctxengine-sessions", "3")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "TestInstalledEngine" not in proc.stdout  # nothing failed
    assert " passed" in proc.stdout and "test_not_collected" not in proc.stdout


def test_unknown_engine_name_is_reported(tmp_path):
    proc = run_kit(tmp_path, "--ctxengine-engine", "no-such-engine")
    assert proc.returncode == 1
    assert "no installed engine named 'no-such-engine'" in proc.stdout
