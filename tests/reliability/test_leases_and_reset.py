"""Two processes on one session, a kill while holding its lease, a kill inside ``reset()``
(issue #13, items 7 and 8), on SQLite and on PostgreSQL; and the runtime without ``fcntl``.

Every process is a real host (``session_driver.py``) killed with SIGKILL at a named fault
point; the checks read the stores with plain SQL.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from pg.fixtures import pg_database  # noqa: F401  (fixture)

from ctxengine_host import faults

DRIVER = Path(__file__).with_name("session_driver.py")
BACKENDS = ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]


@pytest.fixture(params=BACKENDS)
def stores(request, tmp_path) -> dict[str, str]:
    """The transcript store and the LCM database: two SQLite files, or one PG schema."""
    if request.param == "sqlite":
        return {"store": str(tmp_path / "transcripts.db"), "lcm": str(tmp_path / "lcm.db")}
    from pg.fixtures import fresh_schema_url

    url = fresh_schema_url(request.getfixturevalue("pg_database"))
    return {"store": url, "lcm": url}


def driver_env(tmp_path: Path, point: str | None = None, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CTXENGINE_FAULT")}
    env.update(
        DRIVER_WORKDIR=str(tmp_path / "data"),
        CTXENGINE_QUARANTINE_FILE=str(tmp_path / "quarantine.jsonl"),
        PYTHONPATH=os.pathsep.join([str(Path(__file__).parents[1]), env.get("PYTHONPATH", "")]),
        **extra,
    )
    if point:
        env[faults.FAULT_ENV] = point
    return env


def drive(stores, tmp_path, mode: str, *args: str, point=None, lcm=True, **extra):
    return subprocess.run(
        [sys.executable, str(DRIVER), mode, stores["store"], stores["lcm"] if lcm else "-",
         "chat", *args],
        env=driver_env(tmp_path, point, **extra), capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def transcript(stores, sql: str) -> list[tuple]:
    if stores["store"].startswith("postgresql://"):
        from pg.fixtures import pg_connect

        with pg_connect(stores["store"]) as conn:
            return conn.execute(sql).fetchall()
    conn = sqlite3.connect(stores["store"])
    try:
        return conn.execute(sql.replace("transcript_", "").replace("%s", "?")).fetchall()
    finally:
        conn.close()


def live_texts(stores) -> list[str]:
    rows = transcript(
        stores,
        "SELECT m.body FROM transcript_live l JOIN transcript_messages m ON m.row_id = l.row_id"
        " WHERE l.session_id = 'chat' ORDER BY l.position",
    )
    return [json.loads(r[0]).get("content") or "" for r in rows]


# ------------------------------------------------------------------- item 7: leases


def test_two_processes_on_one_session_lose_no_acknowledged_message(tmp_path, stores):
    command = [sys.executable, str(DRIVER), "turns", stores["store"], "-", "chat"]
    env = driver_env(tmp_path)
    procs = [
        subprocess.Popen([*command, "30", tag], env=env, stdout=subprocess.PIPE, text=True)
        for tag in ("p", "q")
    ]
    acked = []
    for proc in procs:
        out, _ = proc.communicate(timeout=300)
        assert proc.returncode == 0
        acked += [line.split()[1] for line in out.splitlines() if line.startswith("ack ")]
    assert len(acked) == 60
    live = live_texts(stores)
    lost = [a for a in acked if a not in live]
    assert lost == [], f"{len(lost)} of 60 acknowledged messages left the live view"
    assert len(live) == 120  # every user message and its answer, once each


def test_a_second_process_waits_then_gets_a_clear_error(tmp_path):
    from ctxengine_host.stores.transcript import SessionBusy, SQLiteTranscriptStore

    stores = {"store": str(tmp_path / "transcripts.db"), "lcm": str(tmp_path / "lcm.db")}
    holder = subprocess.Popen(
        [sys.executable, str(DRIVER), "hold", stores["store"], stores["lcm"], "chat"],
        env=driver_env(tmp_path), stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout.readline().strip() == "held"
        store = SQLiteTranscriptStore(stores["store"], lease_timeout=0.3)
        started = time.monotonic()
        with pytest.raises(SessionBusy, match="open in another process"):
            store.open_session("chat")
        assert time.monotonic() - started >= 0.3
        assert store.open_session("other").created  # other sessions are not held
        store.close()
    finally:
        holder.kill()
        holder.wait()


@pytest.mark.parametrize("point", ["host.lease.acquired", "store.append_live.mid_transaction"])
def test_a_killed_holder_hands_the_lease_over_at_once(tmp_path, stores, point):
    """SIGKILL while holding the lease (right after taking it, or inside a write): the OS
    (SQLite) or the server (PostgreSQL) drops it, the next process takes it at once and
    finds every message the dead one acknowledged."""
    first = drive(stores, tmp_path, "turns", "3", "dead", point=f"{point}:2", lcm=False)
    assert first.returncode == -signal.SIGKILL, first.stderr
    acked = [line.split()[1] for line in first.stdout.splitlines() if line.startswith("ack ")]
    started = time.monotonic()
    second = drive(stores, tmp_path, "turns", "2", "next", lcm=False, CTXENGINE_LEASE_TIMEOUT="20")
    assert second.returncode == 0, second.stderr
    assert time.monotonic() - started < 15  # no lease timeout was waited out
    live = live_texts(stores)
    assert all(a in live for a in acked) and "next-1" in live


def test_the_runtime_imports_and_records_without_fcntl(tmp_path):
    """As on Windows: no ``fcntl`` module. The quarantine log and the session leases work."""
    code = (
        "import sys\n"
        "sys.modules['fcntl'] = None\n"
        "import ctxengine_host, ctxengine_host.runtime.host\n"
        "import ctxengine_host.stores.quarantine as q\n"
        "from ctxengine_host.stores.transcript import SQLiteTranscriptStore\n"
        f"log = q.QuarantineLog(__import__('pathlib').Path({str(tmp_path / 'q.jsonl')!r}))\n"
        "log.record('e', 'ingest', 'boom')\n"
        "assert [r.reason for r in log.records()] == ['boom']\n"
        f"store = SQLiteTranscriptStore({str(tmp_path / 't.db')!r}, lease_timeout=0.2)\n"
        "store.open_session('s')\n"
        "other = SQLiteTranscriptStore(store.path, lease_timeout=0.2)\n"
        "try:\n"
        "    other.open_session('s')\n"
        "except TimeoutError:\n"
        "    print('held')\n"
        "print('ok')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["held", "ok"]


# --------------------------------------------------------------- item 8: reset crashes


def lcm_rows(stores) -> list[tuple[int, int, str]]:
    """(generation, seq, content) of every LCM message of the session."""
    sql = (
        "SELECT c.generation, m.seq, m.content FROM lcm_messages m JOIN lcm_conversations c"
        " ON c.id = m.conversation_id WHERE c.session_id LIKE '%%chat' ORDER BY 1, 2"
    )
    if stores["lcm"].startswith("postgresql://"):
        from pg.fixtures import pg_connect

        with pg_connect(stores["lcm"]) as conn:
            return conn.execute(sql).fetchall()
    conn = sqlite3.connect(stores["lcm"])
    try:
        return conn.execute(sql.replace("lcm_", "").replace("%%", "%")).fetchall()
    finally:
        conn.close()


@pytest.mark.parametrize(
    "point",
    [
        "host.reset.after_begin",
        "host.reset.after_engine",
        "store.finish_reset.mid_transaction",
        "kill-before-live-reset",
    ],
)
def test_a_kill_inside_reset_leaves_one_state_never_a_blend(tmp_path, stores, point):
    extra = {"DRIVER_KILL_BEFORE_LIVE_RESET": "1"} if point == "kill-before-live-reset" else {}
    fault = None if extra else point
    first = drive(stores, tmp_path, "reset", point=fault, **extra)
    assert first.returncode == -signal.SIGKILL, first.stderr
    resumed = drive(stores, tmp_path, "resume")
    assert resumed.returncode == 0, resumed.stderr
    sent = resumed.stdout.strip().splitlines()[-1]
    # The reset happened (it was asked for and begun): nothing from before it is sent.
    assert "before the reset" not in sent and "after the reset" in sent
    assert live_texts(stores)[0] == "after the reset"
    rows = lcm_rows(stores)
    current = max(g for g, _, _ in rows)
    texts = [c for g, _, c in rows if g == current]
    assert not any("before the reset" in t for t in texts), rows
    before = [c for g, _, c in rows if "before the reset" in c]
    assert len(before) == len(set(before)) == 6  # 3 turns, stored once, in the old generation
