"""The no-SDK agent loop example runs end to end in a fresh process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "minimal_agent_loop.py"


def test_minimal_agent_loop_runs_and_compacts(tmp_path):
    store = tmp_path / "loop.db"
    result = subprocess.run(
        [sys.executable, str(EXAMPLE), "--turns", "45", "--store", str(store)],
        capture_output=True,
        text=True,
        env=dict(os.environ),
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("engine: legacy")
    assert sum(1 for line in lines if line.startswith("turn ")) == 45
    assert any("compacted: overflow" in line for line in lines)
    assert lines[-1].startswith("done: ") and "mode normal" in lines[-1]
    assert store.is_file()
