"""A replay runs pinned to one core (replay/one_core.py) unless told ``--all-cores``."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from ctxengine_host.replay.one_core import current_cpu, on_one_core

from .conftest import SHORT, run_cli

PLUGINS = Path(__file__).parent / "plugins"
ALLOWED = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else set()
needs_two_cores = pytest.mark.skipif(len(ALLOWED) < 2, reason="needs two allowed CPUs")


def test_current_cpu_is_one_this_process_may_use() -> None:
    assert current_cpu() in ALLOWED


@needs_two_cores
def test_pinning_reaches_threads_started_before_and_is_undone() -> None:
    release = threading.Event()
    seen: dict[str, set[int]] = {}
    worker = threading.Thread(target=release.wait)
    worker.start()
    try:
        with on_one_core():
            seen["caller"] = os.sched_getaffinity(0)
            seen["worker"] = os.sched_getaffinity(worker.native_id)
            policies = {os.sched_getscheduler(0), os.sched_getscheduler(worker.native_id)}
        seen["worker after"] = os.sched_getaffinity(worker.native_id)
        policies_after = {os.sched_getscheduler(0), os.sched_getscheduler(worker.native_id)}
    finally:
        release.set()
        worker.join()
    assert len(seen["caller"]) == 1 and seen["worker"] == seen["caller"]
    assert os.sched_getaffinity(0) == ALLOWED
    assert seen["worker after"] == ALLOWED
    assert policies == {os.SCHED_BATCH}, "a woken thread would preempt the GIL's holder"
    assert policies_after == {os.SCHED_OTHER}


def test_disabled_changes_nothing() -> None:
    with on_one_core(enabled=False):
        assert os.sched_getaffinity(0) == ALLOWED


def _cores_seen(tmp_path: Path, *args: str) -> list[str]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    log = tmp_path / "cores.log"
    env = {"CTXENGINE_PLUGINS_DIR": str(PLUGINS), "CORES_LOG": str(log)}
    result = run_cli(*args, "--engine" if args[0] == "replay" else "--engines", "cores", env=env)
    assert result.returncode == 0, result.stderr
    lines = log.read_text().split()
    assert lines, "the engine was never called"
    return lines


@needs_two_cores
def test_replay_runs_its_engine_on_one_core(tmp_path: Path) -> None:
    assert {len(line.split(",")) for line in _cores_seen(tmp_path, "replay", str(SHORT))} == {1}


@needs_two_cores
def test_replay_all_cores_leaves_every_cpu(tmp_path: Path) -> None:
    lines = _cores_seen(tmp_path, "replay", str(SHORT), "--all-cores")
    assert {len(line.split(",")) for line in lines} == {len(ALLOWED)}


@needs_two_cores
def test_compare_pins_each_replay_and_takes_all_cores(tmp_path: Path) -> None:
    pinned = _cores_seen(tmp_path / "a", "compare", str(SHORT), "--out", str(tmp_path / "a"))
    assert {len(line.split(",")) for line in pinned} == {1}
    free = _cores_seen(
        tmp_path / "b", "compare", str(SHORT), "--out", str(tmp_path / "b"), "--all-cores"
    )
    assert {len(line.split(",")) for line in free} == {len(ALLOWED)}
