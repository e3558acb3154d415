"""End to end: the committed sample replayed through the real runtime with the slot set to
lcm, every probe recovered through the engine's own tools with the question's keywords.

SQLite only: a replay keeps the engine's files with its output (``--out``), which is what
the last assertions check; the engine's behaviour on PostgreSQL is the ``database``-
parametrized suite's subject, and the CLI's on PostgreSQL is tests/pg/test_cli.py's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "examples" / "sessions" / "short-60.jsonl"
LONG_SAMPLE = ROOT / "examples" / "sessions" / "long-2000.jsonl.gz"
CLI = [sys.executable, "-m", "ctxengine_host.cli"]

pytestmark = pytest.mark.skipif(not SAMPLE.exists(), reason="the committed sample is missing")


def replay(
    tmp_path: Path, *args: str, env_engine: str | None = None, sample: Path = SAMPLE
) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CTXENGINE_")}
    env["CTXENGINE_DATA_DIR"] = str(tmp_path / "data")
    env["CTXENGINE_CONFIG"] = str(tmp_path / "none.toml")
    (tmp_path / "none.toml").write_text("")
    if env_engine:
        env["CTXENGINE_ENGINE"] = env_engine
    done = subprocess.run(
        [*CLI, "replay", str(sample), "--json", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


@pytest.mark.parametrize(
    ("args", "env_engine"),
    [(("--context-length", "8192"), "lcm"), (("--engine", "lcm"), None)],
    ids=["env-slot-8k-window", "flag-32k-window"],
)
def test_replay_through_the_slot_recovers_every_probe(tmp_path, args, env_engine):
    report = replay(tmp_path, *args, "--out", str(tmp_path / "run"), env_engine=env_engine)
    assert report["engine"]["name"] == "lcm" and not report["engine"]["fallback"]
    summary = report["summary"]
    assert summary["quarantines"] == 0 and summary["fallback_turns"] == 0
    assert summary["compactions"] > 0 and summary["compaction_failures"] == 0
    assert all(t["within_budget"] for t in report["turns"])
    assert summary["probes_total"] > 0
    for probe in report["probes"]:
        assert probe["search_tool"] == "lcm_grep", probe
        assert probe["search_found"], probe
        assert probe["expand_verbatim"], probe
    # The engine's history stays with the replay (--out), not in the user's data dir.
    assert list((tmp_path / "run").rglob("lcm.db"))
    assert not list((tmp_path / "data").rglob("lcm.db"))


def test_the_long_sample_recovers_every_probe_through_the_tools(tmp_path):
    """The 2,000-turn sample (50 planted facts, most long compacted away): each one found
    by lcm_grep with the question's keywords and expanded back verbatim (~40 s)."""
    report = replay(tmp_path, "--engine", "lcm", sample=LONG_SAMPLE)
    summary = report["summary"]
    assert summary["compaction_failures"] == 0 and summary["quarantines"] == 0
    assert all(t["within_budget"] for t in report["turns"])
    missed = [p for p in report["probes"] if not (p["search_found"] and p["expand_verbatim"])]
    assert summary["probes_total"] == 50 and not missed, missed
