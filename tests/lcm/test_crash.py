"""Crash safety: a process killed inside a sweep or an ingest leaves a consistent store, on
each backend (on PostgreSQL the server rolls back the dead connection's transaction)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import check_invariants

from ctxengine_lcm.faults import FAULT_ENV, FAULT_HIT_ENV

DRIVER = Path(__file__).with_name("crash_driver.py")


def run_driver(
    data_dir: Path, database: str, start: int, turns: int, point: str | None = None, hit: int = 1
):
    env = {k: v for k, v in os.environ.items() if k not in (FAULT_ENV, FAULT_HIT_ENV)}
    if point:
        env[FAULT_ENV] = point
        env[FAULT_HIT_ENV] = str(hit)
    return subprocess.run(
        [sys.executable, str(DRIVER), str(data_dir), str(start), str(turns), database],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize(
    ("point", "hit"),
    [
        ("lcm.sweep.before_commit", 1),
        ("lcm.sweep.before_commit", 4),
        ("lcm.sweep.after_commit", 2),
        ("lcm.ingest.mid_batch", 7),
    ],
)
def test_kill_inside_a_sweep_or_ingest_then_reopen_and_resume(tmp_path, database, point, hit):
    first = run_driver(tmp_path, database, 0, 40, point, hit)
    assert first.returncode == -signal.SIGKILL, first.stderr
    before = check_invariants(database)
    assert before["messages"] > 0
    # Resume on the same database (turn numbers continue; uids are fresh per run).
    second = run_driver(tmp_path, database, 1000, 20)
    assert second.returncode == 0 and "finished" in second.stdout, second.stderr
    after = check_invariants(database)
    assert after["messages"] == before["messages"] + 80
    assert after["summaries"] > before["summaries"]
