"""The legacy engine driven through the real CLI and runtime (``ctxengine replay``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_replay_of_the_short_sample_compacts_within_budget():
    proc = subprocess.run(
        [sys.executable, "-m", "ctxengine_host.cli", "replay",
         str(ROOT / "examples" / "sessions" / "short-60.jsonl"),
         "--engine", "legacy", "--context-length", "8192", "--json"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    summary = report["summary"]
    assert report["engine"]["name"] == "legacy" and not report["engine"]["fallback"]
    assert summary["compactions"] > 0 and summary["compaction_failures"] == 0
    assert summary["turns_over_budget"] == 0
    assert summary["quarantines"] == 0 and summary["fallback_turns"] == 0
    levels = [level for row in report["turns"] for level in row["summary_levels"]]
    assert levels and set(levels) <= {0, 1, 2}


def test_a_session_file_whose_system_prompt_no_store_keeps_is_a_clear_error(tmp_path):
    """The runtime keeps the system prompt as given, and no store keeps a NUL: the replay
    names the file and the problem (it was a traceback)."""
    lines = (ROOT / "examples" / "sessions" / "short-60.jsonl").read_text().splitlines()
    header, *messages = (json.loads(line) for line in lines)
    system = {"role": "system", "content": "You are a coding agent.\x00"}
    path = tmp_path / "nul-prompt.jsonl"
    path.write_text("\n".join(json.dumps(m) for m in [header, system, *messages]) + "\n")
    proc = subprocess.run(
        [sys.executable, "-m", "ctxengine_host.cli", "replay", str(path), "--engine",
         "legacy", "--context-length", "8192", "--out", str(tmp_path / "out")],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr, proc.stderr
    assert "nul-prompt.jsonl" in proc.stderr and "holds a NUL character" in proc.stderr
