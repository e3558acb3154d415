"""Load: many sessions on threads sharing one host and one LCM database, with compactions.

CI: 16 sessions x 50 turns. Soak (opt-in): ``CTXENGINE_SOAK=1`` → 64 x 200 (or set
``CTXENGINE_LOAD_SESSIONS`` / ``CTXENGINE_LOAD_TURNS``). Checks: every thread finishes
(no deadlock), no exception reaches a caller (``database is locked`` included), every
message is stored exactly once, in order, in the transcript and in the LCM; the figures
(turns/s, p50/p99 time spent in ctxengine per turn) go to the report.
"""

from __future__ import annotations

import json
import os
import random
import sqlite3
import statistics
import threading
import time

from ctxengine_host.config import CompressionSection, CtxConfig, LoadedConfig
from ctxengine_host.runtime.isolation import is_quarantined
from ctxengine_host.stores.quarantine import QuarantineLog

SOAK = os.environ.get("CTXENGINE_SOAK") == "1"
SESSIONS = int(os.environ.get("CTXENGINE_LOAD_SESSIONS") or (64 if SOAK else 16))
TURNS = int(os.environ.get("CTXENGINE_LOAD_TURNS") or (200 if SOAK else 50))
WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "cache",
    "index",
    "queue",
    "retry",
    "socket",
    "schema",
    "commit",
    "token",
]


def turn_messages(session: int, turn: int) -> list[dict]:
    rng = random.Random(f"{session}:{turn}")
    text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(10, 30)))
    call = {"id": f"c{turn}", "type": "function",
            "function": {"name": "grep", "arguments": json.dumps({"q": text[:20]})}}  # fmt: skip
    return [
        {"role": "user", "content": f"s{session} u{turn}: {text}"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": f"c{turn}", "content": f"s{session} t{turn}: {text}"},
        {"role": "assistant", "content": f"s{session} a{turn}: {text}"},
    ]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def test_concurrent_sessions_share_one_host_and_one_lcm_database(make_host, tmp_path, figures):
    cfg = CtxConfig(
        compression=CompressionSection(hook_timeout_seconds=60, context_timeout_seconds=60),
        engines={"lcm": {"database": str(tmp_path / "lcm.db"), "fresh_tail_messages": 4,
                         "leaf_chunk_tokens": 400, "leaf_target_tokens": 48,
                         "condensed_target_tokens": 64}},
    )  # fmt: skip
    cfg.context.reserve_output_tokens = 200
    host = make_host("lcm", cfg=LoadedConfig(config=cfg), context_length=2400, max_workers=64)
    assert host.engine_name == "lcm"
    errors: list[str] = []
    latencies: list[float] = []
    compactions = [0]
    lock = threading.Lock()

    def run(index: int) -> None:
        mine: list[float] = []
        try:
            with host.open_session(f"load-{index}", system_prompt="Be brief.") as session:
                for turn in range(TURNS):
                    user, call, result, answer = turn_messages(index, turn)
                    started = time.perf_counter()
                    session.add_messages([user])
                    session.build_request()
                    session.record_response(call, None)
                    session.record_tool_results([result])
                    session.build_request()
                    session.record_response(answer, None)
                    report = session.finish_turn()
                    mine.append((time.perf_counter() - started) * 1000)
                    with lock:
                        compactions[0] += sum(e.compacted for e in report.compactions)
        except BaseException as exc:  # reported below; nothing may reach the caller
            errors.append(f"session {index}: {type(exc).__name__}: {exc}")
        with lock:
            latencies.extend(mine)

    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(SESSIONS)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + (3600 if SOAK else 240)
    for thread in threads:
        thread.join(max(0.1, deadline - time.monotonic()))
    elapsed = time.perf_counter() - started
    stuck = [t.name for t in threads if t.is_alive()]
    assert stuck == [], f"deadlock: {len(stuck)} sessions never finished"
    assert errors == [], errors[:5]
    assert not any("locked" in e for e in errors)

    for index in range(SESSIONS):
        sid = f"load-{index}"
        rows = [r for r in host.store.rows(sid) if r.origin in ("input", "response")]
        expected = [m for turn in range(TURNS) for m in turn_messages(index, turn)]
        got = [{k: v for k, v in r.message.items() if not k.startswith("_") and k != "message_uid"}
               for r in rows]  # fmt: skip
        assert got == expected, f"{sid}: messages lost, duplicated or reordered"
        uids = [r.message["message_uid"] for r in rows]
        assert lcm_uids(tmp_path / "lcm.db", sid) == uids, f"{sid}: the LCM copy differs"
    assert QuarantineLog().records() == [] and not is_quarantined("lcm")
    assert compactions[0] > 0 and summaries(tmp_path / "lcm.db") > 0, "no compaction happened"

    turns = SESSIONS * TURNS
    figures(
        "load",
        sessions=SESSIONS,
        turns_per_session=TURNS,
        turns_per_second=round(turns / elapsed, 1),
        p50_turn_ms=round(statistics.median(latencies), 2),
        p99_turn_ms=round(percentile(latencies, 0.99), 2),
        compactions=compactions[0],
        seconds=round(elapsed, 2),
    )


def lcm_uids(db, session_id: str) -> list[str]:
    conn = sqlite3.connect(db)
    try:
        return [
            r[0]
            for r in conn.execute(
                "SELECT m.message_uid FROM messages m JOIN conversations c ON c.id = "
                "m.conversation_id WHERE c.session_id LIKE ? ORDER BY c.generation, m.seq",
                (f"%#{session_id}",),  # keyed by the transcript store's id
            )
        ]
    finally:
        conn.close()


def summaries(db) -> int:
    conn = sqlite3.connect(db)
    try:
        return conn.execute("SELECT COUNT(*) FROM summaries").fetchone()[0]
    finally:
        conn.close()


def test_lcm_with_the_smallest_leaf_chunk_still_compacts(make_host, tmp_path):
    cfg = CtxConfig(
        engines={"lcm": {"database": str(tmp_path / "lcm.db"), "fresh_tail_messages": 4,
                         "leaf_chunk_tokens": 256}},
    )  # fmt: skip
    cfg.context.reserve_output_tokens = 200
    host = make_host("lcm", cfg=LoadedConfig(config=cfg), context_length=2400)
    with host.open_session("small-chunks") as session:
        for turn in range(30):
            user, call, result, answer = turn_messages(0, turn)
            session.add_messages([user])
            session.record_response(call, None)
            session.record_tool_results([result])
            session.record_response(answer, None)
            session.finish_turn()
        request = session.build_request()
    assert summaries(tmp_path / "lcm.db") > 0
    assert not request.over_budget
