"""Crash safety: SIGKILL at every named fault point, reopen, check, resume, repeat.

Two seeded campaigns (``crashlib.py``) run in subprocesses, each on its own databases:
the LCM engine (7 points x 9 kills) and the legacy engine, whose compactions rewrite the
host's live view (3 points x 9 kills): 90 kills in all. See crashlib's docstring.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from ctxengine_host import faults

from .crashlib import POINTS

CRASHLIB = Path(__file__).with_name("crashlib.py")
SEED = int(os.environ.get("CTXENGINE_CRASH_SEED", "8"))
KILLS_PER_POINT = int(os.environ.get("CTXENGINE_CRASH_KILLS_PER_POINT", "9"))

#: Found by this campaign (fixed): a message committed to the transcript whose engine ingest
#: was cut short never reached the LCM, because on resume the next message was ingested
#: first and the LCM's catch-up stopped at the first uid it knew. The LCM now reconciles
#: with the host's live view and stores such a message in its history position.
INGEST_GAP = "the LCM lacks transcript messages"


@pytest.fixture(scope="module", params=sorted(POINTS))
def campaign(request, tmp_path_factory) -> dict:
    workdir = tmp_path_factory.mktemp(f"crash-{request.param}")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CTXENGINE_FAULT")}
    env.update(  # module scope runs before the per-test isolation: isolate it here
        XDG_CONFIG_HOME=str(workdir / "config"),
        XDG_DATA_HOME=str(workdir / "data"),
        CTXENGINE_DATA_DIR=str(workdir / "data" / "ctxengine"),
        CTXENGINE_QUARANTINE_FILE=str(workdir / "quarantine.jsonl"),
    )
    done = subprocess.run(
        [sys.executable, str(CRASHLIB), str(workdir / "w"), "--seed", str(SEED),
         "--kills-per-point", str(KILLS_PER_POINT), "--engine", request.param],
        env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.stdout, done.stderr
    return json.loads(done.stdout)


def test_every_point_is_killed_and_survived(campaign, figures):
    keys = ("engine", "kills_per_point", "survived_per_point")
    figures("crash", **{k: campaign[k] for k in keys})
    assert set(campaign["kills_per_point"]) == set(POINTS[campaign["engine"]])
    assert campaign["kills_total"] >= KILLS_PER_POINT * len(POINTS[campaign["engine"]])
    assert all(n >= KILLS_PER_POINT for n in campaign["kills_per_point"].values()), campaign
    assert campaign["survived_per_point"] == campaign["kills_per_point"], campaign["violations"]


def test_no_message_lost_duplicated_reordered_and_the_dag_holds(campaign):
    others = [v for v in campaign["violations"] if INGEST_GAP not in v]
    assert others == []
    assert campaign["messages_committed"] >= 100


def test_the_engine_catches_up_with_every_committed_message(campaign):
    if campaign["engine"] != "lcm":
        pytest.skip("legacy keeps no copy of the history of its own")
    assert [v for v in campaign["violations"] if INGEST_GAP in v] == []


def test_a_point_kills_only_on_its_hit(tmp_path):
    """The arming itself: name:N kills on the N-th hit; other names never fire."""
    code = (
        "from ctxengine_host.faults import fault_point\n"
        "for i in range(5):\n"
        "    fault_point('other'); fault_point('p'); print(i, flush=True)\n"
    )
    env = {**os.environ, faults.FAULT_ENV: "p:3"}
    env.pop(faults.FAULT_HIT_ENV, None)
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert done.returncode == -signal.SIGKILL
    assert done.stdout.split() == ["0", "1"]
    env[faults.FAULT_ENV] = ""
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.split() == ["0", "1", "2", "3", "4"]


def test_a_bad_hit_count_is_a_clear_error():
    with pytest.raises(ValueError, match="positive integer"):
        faults.parse_arming("p", "zero")
    assert faults.parse_arming("p:2") == ("p", 2)
    assert faults.parse_arming("lcm.sweep.before_commit", "4") == ("lcm.sweep.before_commit", 4)
    assert faults.parse_arming(None) == (None, 0)
