"""Many host processes, one database: 4 workers x 8 sessions with compactions; one worker
is SIGKILLed mid-turn and three others resume its sessions concurrently."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

from .fixtures import pg_connect
from .invariants import check_lcm_invariants
from .worker import uid

WORKER = Path(__file__).with_name("worker.py")
TURNS = 8
SESSIONS_PER_WORKER = 8


def write_config(path: Path, url: str) -> Path:
    path.write_text(
        "[context]\n"
        'engine = "lcm"\n'
        "reserve_output_tokens = 256\n"
        "[store]\n"
        f'url = "{url}"\n'
        "[engines.lcm]\n"
        f'database = "{url}"\n'
        "fresh_tail_messages = 4\n"
        "leaf_chunk_tokens = 600\n"
        "leaf_target_tokens = 64\n"
        "condensed_target_tokens = 80\n",
        encoding="utf-8",
    )
    return path


def spawn(config: Path, sessions: list[str], *extra: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, str(WORKER), str(config), str(TURNS), *sessions, *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_four_processes_one_killed_mid_turn_and_resumed(pg_url, tmp_path):
    config = write_config(tmp_path / "ctxengine.toml", pg_url)
    owned = {w: [f"w{w}-s{n}" for n in range(SESSIONS_PER_WORKER)] for w in range(4)}
    victim_sessions = owned[0]
    die_at = f"{victim_sessions[3]}:{TURNS // 2}"
    first = [spawn(config, owned[0], "--die-at", die_at)]
    first += [spawn(config, owned[w]) for w in (1, 2, 3)]
    outputs = [p.communicate(timeout=120) for p in first]
    assert first[0].returncode == -signal.SIGKILL, outputs[0]
    for proc, (_out, err) in zip(first[1:], outputs[1:], strict=True):
        assert proc.returncode == 0, err[-3000:]

    with pg_connect(pg_url) as conn:
        stored = {
            r[0]
            for r in conn.execute(
                "SELECT message_uid FROM transcript_messages WHERE session_id=%s",
                (victim_sessions[3],),
            )
        }
    assert uid(victim_sessions[3], TURNS // 2, "user") in stored, "not killed mid-turn"
    assert uid(victim_sessions[3], TURNS // 2, "assistant") not in stored

    # The victim's sessions: three other processes take them over at once (leases
    # serialize them; whoever comes second finds the turns done and adds nothing).
    resumers = [spawn(config, victim_sessions) for _ in range(3)]
    for proc in resumers:
        _out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err[-3000:]

    with pg_connect(pg_url) as conn:
        for sessions in owned.values():
            for sid in sessions:
                expected = [uid(sid, t, r) for t in range(TURNS) for r in ("user", "assistant")]
                live = [
                    r[0]
                    for r in conn.execute(
                        "SELECT m.message_uid FROM transcript_live l JOIN transcript_messages m "
                        "ON m.row_id = l.row_id WHERE l.session_id=%s ORDER BY l.position",
                        (sid,),
                    )
                ]
                rows = [
                    r[0]
                    for r in conn.execute(
                        "SELECT message_uid FROM transcript_messages WHERE session_id=%s "
                        "AND origin <> 'engine' ORDER BY row_id",
                        (sid,),
                    )
                ]
                lcm = [
                    r[0]
                    for r in conn.execute(
                        "SELECT m.message_uid FROM lcm_messages m JOIN lcm_conversations c "
                        "ON c.id = m.conversation_id WHERE c.session_id LIKE %s ORDER BY m.seq",
                        (f"%#{sid}",),  # keyed by the transcript store's id
                    )
                ]
                assert rows == expected, f"{sid}: transcript rows lost, duplicated or reordered"
                assert live == expected, f"{sid}: live view differs"
                assert lcm == expected, f"{sid}: LCM history differs"
                (turn_index,) = conn.execute(
                    "SELECT turn_index FROM transcript_sessions WHERE session_id=%s", (sid,)
                ).fetchone()
                assert turn_index == TURNS
        totals = check_lcm_invariants(conn)
    assert totals["conversations"] == 32
    assert totals["messages"] == 32 * TURNS * 2
    assert totals["summaries"] > 0, "no compaction happened: the test would prove little"
