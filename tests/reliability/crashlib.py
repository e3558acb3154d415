"""Crash-safety campaign: kill a replaying session at named fault points, reopen, check, resume.

Run as a script (``python tests/reliability/crashlib.py WORKDIR --seed S --kills-per-point K``)
it prints a JSON report. The process imports everything once and then forks one child per
kill (a "zygote"), so a kill costs milliseconds instead of an interpreter start; each child
arms one fault point (``CTXENGINE_FAULT_POINT`` / ``CTXENGINE_FAULT_HIT``), replays the
seeded session from where the store says it stopped, and is SIGKILLed at the N-th hit.
After every child the parent checks, with plain SQL, on the same two databases:

* the transcript's committed rows are exactly a prefix of the script: none lost (every
  message the child acknowledged is there), none duplicated, none out of order; at most
  the one message in flight at the kill is there unacknowledged;
* every ``message_uid`` seen before is unchanged; the live view still points at them;
* the LCM DAG invariants hold, and the LCM's messages are those of the transcript, in order;
* the next child resumes (a resume that fails is a violation).

The ``hit`` of each kill comes from a ``random.Random(seed)``, so a campaign is reproducible.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import random
import signal
import sqlite3
import sys
import threading
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ctxengine_host import faults
from ctxengine_host.config import CompressionSection, CtxConfig, LoadedConfig, SummarizerSection
from ctxengine_host.contract.context import EngineContext
from ctxengine_host.runtime.host import ContextHost
from ctxengine_host.runtime.validity import sequence_problems
from ctxengine_host.summarizer import SummarizerService
from ctxengine_host.tokens import TokenCounter
from ctxengine_lcm.engine import LcmEngine

SESSION = "crash"
SYSTEM = "You are a terse coding assistant."
MESSAGES_PER_TURN = 4

#: Per engine, the fault points and the largest hit count drawn for each (how often a
#: child reaches it). ``legacy`` rewrites the host's live view when it compacts, so its
#: campaign covers the transcript store's compaction writes; ``lcm`` keeps the history itself.
POINTS: dict[str, dict[str, int]] = {
    "lcm": {
        "store.append_live.mid_transaction": 16,
        "host.ingest.before_engine": 16,
        "lcm.ingest.mid_batch": 16,
        "lcm.sweep.before_commit": 3,
        "lcm.sweep.after_commit": 3,
        "host.maintain.background": 4,
        # Killed holding the session's lease: the next child must get it at once.
        "host.lease.acquired": 1,
    },
    "legacy": {
        "store.append_live.mid_transaction": 16,
        "host.ingest.before_engine": 16,
        "host.lease.acquired": 1,
    },
}

_WORDS = [
    "parser",
    "cache",
    "index",
    "token",
    "budget",
    "socket",
    "thread",
    "commit",
    "branch",
    "schema",
    "migration",
    "request",
    "latency",
    "vector",
    "config",
    "plugin",
    "session",
    "summary",
    "window",
    "retry",
    "timeout",
    "queue",
]


class BackgroundLcm(LcmEngine):
    """The LCM engine with background turn maintenance: a sweep after each turn when due."""

    turn_maintenance_mode = "background"

    def maintain(self, session_id, runtime_settings, transcript):
        if self.should_compress_preflight([]):
            self.compress([])


def script_message(seed: int, index: int) -> dict[str, Any]:
    """Message ``index`` of the seeded session (deterministic; every content unique)."""
    turn, step = divmod(index, MESSAGES_PER_TURN)
    rng = random.Random(f"{seed}:{index}")
    words = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(15, 45)))
    if step == 0:
        return {"role": "user", "content": f"[u{turn}] {words}?"}
    if step == 1:
        call = {
            "id": f"call_{turn}",
            "type": "function",
            "function": {"name": "read_file", "arguments": json.dumps({"path": f"f{turn}.py"})},
        }
        return {"role": "assistant", "content": None, "tool_calls": [call]}
    if step == 2:
        return {"role": "tool", "tool_call_id": f"call_{turn}", "content": f"[t{turn}] {words}"}
    return {"role": "assistant", "content": f"[a{turn}] {words}."}


def make_host(workdir: Path, engine_name: str = "lcm") -> ContextHost:
    """A host over ``workdir``'s transcript store with a short window, so that compactions
    come every few turns: the background LCM engine (leaf and condensed sweeps), or
    ``legacy`` (a rolling summary written into the transcript store)."""
    cfg = CtxConfig(
        compression=CompressionSection(hook_timeout_seconds=30, context_timeout_seconds=30)
    )
    cfg.context.reserve_output_tokens = 200
    options = {"model": "gpt-4", "context_length": 2400, "config": LoadedConfig(config=cfg)}
    store = workdir / "transcripts.db"
    if engine_name != "lcm":
        return ContextHost(engine_name, store_path=store, observers=[], **options)
    counter = TokenCounter("gpt-4")
    service = SummarizerService(SummarizerSection(), counter)
    context = EngineContext(
        engine_name="lcm",
        data_dir=workdir,
        count_tokens=counter.count_any,
        summarize=service.summarize,
    )
    engine = BackgroundLcm(
        config={
            "database": str(workdir / "lcm.db"),
            "fresh_tail_messages": 4,
            "leaf_chunk_tokens": 400,
            "leaf_target_tokens": 40,
            "condensed_target_tokens": 48,
            "condense_fanin": 2,
        },
        context=context,
    )
    return ContextHost(engine, store_path=store, observers=[], **options)


def drive_child(workdir: Path, seed: int, turns: int, engine: str = "lcm") -> None:
    """Resume the session where the store says it stopped and replay ``turns`` more turns,
    appending each acknowledged message index to ``workdir/ack``."""
    host = make_host(workdir, engine)
    session = host.open_session(SESSION, system_prompt=SYSTEM)
    done = len(committed_rows(workdir / "transcripts.db"))
    end = (done // MESSAGES_PER_TURN + turns) * MESSAGES_PER_TURN
    ack = os.open(workdir / "ack", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    for index in range(done, end):
        message = script_message(seed, index)
        step = index % MESSAGES_PER_TURN
        if step == 0:
            session.add_messages([message])
            session.build_request()
        elif step == 1:
            session.record_response(message, None)
        elif step == 2:
            session.record_tool_results([message])
            session.build_request()
        else:
            session.record_response(message, None)
            session.finish_turn()
        os.write(ack, f"{index}\n".encode())
    session.build_request()  # the engine catches up with anything it missed
    session.end()
    host.close()


# --------------------------------------------------------------------------- checks


def committed_rows(db: Path) -> list[tuple[int, str, dict[str, Any]]]:
    """(row_id, message_uid, body) of what the user, provider and tools said, in order."""
    if not db.exists():
        return []
    conn = sqlite3.connect(db)
    try:
        rows = conn.execute(
            "SELECT row_id, message_uid, body FROM messages WHERE session_id=? AND "
            "origin IN ('input', 'response') ORDER BY row_id",
            (SESSION,),
        ).fetchall()
    finally:
        conn.close()
    return [(r, uid, json.loads(body)) for r, uid, body in rows]


def session_rows(db: Path) -> dict[int, dict[str, Any]]:
    """Every row of the session (compaction rows included), by row id."""
    conn = sqlite3.connect(db)
    try:
        rows = conn.execute(
            "SELECT row_id, body FROM messages WHERE session_id=?", (SESSION,)
        ).fetchall()
    finally:
        conn.close()
    return {r: json.loads(body) for r, body in rows}


def live_row_ids(db: Path) -> list[int]:
    conn = sqlite3.connect(db)
    try:
        return [
            r[0]
            for r in conn.execute(
                "SELECT row_id FROM live WHERE session_id=? ORDER BY position", (SESSION,)
            )
        ]
    finally:
        conn.close()


def lcm_uids(db: Path) -> list[str]:
    """The LCM's stored message uids of the session's current conversation, by sequence."""
    if not db.exists():
        return []
    conn = sqlite3.connect(db)
    try:
        return [
            r[0]
            for r in conn.execute(
                "SELECT m.message_uid FROM messages m JOIN conversations c ON "
                "c.id = m.conversation_id WHERE c.session_id LIKE ? AND c.is_current=1 "
                "ORDER BY m.seq",
                (f"%#{SESSION}",),  # keyed by the transcript store's id
            )
        ]
    finally:
        conn.close()


def _load_lcm_invariants():
    """The LCM suite's independent DAG checker (tests/lcm/conftest.py), reused as is."""
    tests = Path(__file__).resolve().parents[1]
    sys.path.insert(0, str(tests))  # it imports tests/pg's fixtures and invariants
    path = tests / "lcm" / "conftest.py"
    spec = importlib.util.spec_from_file_location("lcm_suite_invariants", path)
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(module)
    return module.check_invariants


def acknowledged(workdir: Path) -> int:
    """How many script messages the children have acknowledged (indices are contiguous)."""
    path = workdir / "ack"
    if not path.exists():
        return 0
    lines = path.read_text().split()
    return max(int(x) for x in lines) + 1 if lines else 0


@dataclass
class Checker:
    """Checks the stores after each child; remembers uids to prove they stay stable."""

    workdir: Path
    seed: int
    engine: str = "lcm"
    uids: dict[int, str] = field(default_factory=dict)
    check_dag: Any = None

    def __post_init__(self) -> None:
        self.check_dag = _load_lcm_invariants()

    def check(self, base: int = 0, final: bool = False) -> list[str]:
        """``base``: rows committed before the child ran (it resumed after them)."""
        problems: list[str] = []
        transcripts = self.workdir / "transcripts.db"
        rows = committed_rows(transcripts)
        acked = acknowledged(self.workdir)
        if len(rows) < acked:
            problems.append(f"lost: {acked} messages acknowledged, {len(rows)} committed")
        in_flight = len(rows) - max(acked, base)
        if in_flight > 1:
            problems.append(f"{in_flight} unacknowledged rows after one kill (at most 1)")
        for index, (_, _, body) in enumerate(rows):
            if body != script_message(self.seed, index):
                problems.append(f"row {index} is not script message {index} (dup/reorder): {body}")
                break
        uids = [uid for _, uid, _ in rows]
        if len(set(uids)) != len(uids):
            problems.append("a message_uid appears on two committed rows")
        for index, uid in enumerate(uids):
            if self.uids.setdefault(index, uid) != uid:
                problems.append(f"message {index} changed uid {self.uids[index]} -> {uid}")
        problems += self._live_view(transcripts, rows)
        lcm_db = self.workdir / "lcm.db"
        if lcm_db.exists():
            try:
                self.check_dag(lcm_db)
            except AssertionError as exc:
                problems.append(f"LCM DAG invariant broken: {exc}")
            stored = lcm_uids(lcm_db)
            if len(set(stored)) != len(stored):
                problems.append("the LCM stored a message twice")
            position = {uid: i for i, uid in enumerate(uids)}
            foreign = [u for u in stored if u not in position]
            if foreign:
                problems.append(f"the LCM holds {len(foreign)} uids not in the transcript")
            order = [position[u] for u in stored if u in position]
            if order != sorted(order):
                problems.append("the LCM stored messages out of transcript order")
            if final and stored != uids:
                missing = [i for i, u in enumerate(uids) if u not in set(stored)]
                problems.append(f"the LCM lacks transcript messages {missing} after resuming")
        return problems

    def _live_view(self, transcripts: Path, rows: list) -> list[str]:
        """The live view points at stored rows of this session and ends with the newest
        committed message; with the LCM (no host-side compaction) it is exactly them."""
        if not rows:
            return []
        live = live_row_ids(transcripts)
        if self.engine == "lcm":
            ok = live == [r for r, _, _ in rows]
            return [] if ok else ["the live view does not point at the committed rows in order"]
        problems = []
        if not live or live[-1] != rows[-1][0]:
            problems.append("the newest committed message is not the end of the live view")
        bodies = session_rows(transcripts)
        missing = [r for r in live if r not in bodies]
        if missing:
            problems.append(f"the live view points at rows {missing[:5]} that do not exist")
        elif sequence_problems([bodies[r] for r in live], allow_pending_tail=True):
            problems.append("the live view is not a valid message sequence")
        return problems


# --------------------------------------------------------------------------- campaign


def _child(workdir: Path, seed: int, turns: int, point: str | None, hit: int, engine: str) -> None:
    """In the forked child: arm the point, replay, exit (SIGKILL comes from the point)."""
    code = 0
    try:
        if point:
            os.environ[faults.FAULT_ENV] = point
            os.environ[faults.FAULT_HIT_ENV] = str(hit)
        else:
            os.environ.pop(faults.FAULT_ENV, None)
            os.environ.pop(faults.FAULT_HIT_ENV, None)
        faults.arm_from_environment()
        drive_child(workdir, seed, turns, engine)
    except BaseException:
        (workdir / "child-error.txt").write_text(traceback.format_exc())
        code = 1
    os._exit(code)


def _run_child(
    workdir: Path, seed: int, turns: int, point: str | None, hit: int, engine: str
) -> str:
    """Fork one child; 'killed', 'finished' or 'failed: <traceback tail>'."""
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        _child(workdir, seed, turns, point, hit, engine)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL:
        return "killed"
    if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0:
        return "finished"
    error = workdir / "child-error.txt"
    detail = error.read_text()[-800:] if error.exists() else f"status {status}"
    return f"failed: {detail}"


def _warm_up(scratch: Path, seed: int, engine: str) -> None:
    """Run one turn in this process first, so every lazy import and the tokenizer are
    loaded once here and inherited by each forked child (the host's worker threads end
    with it, so the fork happens in a single-threaded process)."""
    scratch.mkdir(parents=True, exist_ok=True)
    drive_child(scratch, seed, 1, engine)
    for thread in threading.enumerate():
        if thread is not threading.main_thread():
            thread.join(5)  # the stopped worker threads finish exiting


def run_campaign(
    workdir: Path, seed: int, kills_per_point: int, turns_per_child: int = 5, engine: str = "lcm"
) -> dict[str, Any]:
    """Kill, check, resume, on the same databases, until each point has its kills."""
    workdir.mkdir(parents=True, exist_ok=True)
    _warm_up(workdir / "warm-up", seed, engine)
    rng = random.Random(seed)
    checker = Checker(workdir, seed, engine)
    points = POINTS[engine]
    kills = {p: 0 for p in points}
    survived = {p: 0 for p in points}
    misses = {p: 0 for p in points}
    violations: list[str] = []
    started = time.perf_counter()
    for round_ in range(kills_per_point * 3):
        pending = [p for p in points if kills[p] < kills_per_point]
        if not pending:
            break
        for point in pending:
            hit = rng.randint(1, points[point])
            base = len(committed_rows(workdir / "transcripts.db"))
            outcome = _run_child(workdir, seed, turns_per_child, point, hit, engine)
            problems = checker.check(base)
            if outcome == "killed":
                kills[point] += 1
                survived[point] += not problems
            elif outcome == "finished":
                misses[point] += 1
            else:
                problems.append(f"child armed at {point}:{hit} failed to resume: {outcome}")
            violations += [f"round {round_} {point}:{hit}: {p}" for p in problems]
    final_base = len(committed_rows(workdir / "transcripts.db"))
    final = _run_child(workdir, seed, 2, None, 0, engine)
    if final != "finished":
        violations.append(f"the final clean resume did not finish: {final}")
    violations += [f"final: {p}" for p in checker.check(final_base, final=True)]
    return {
        "engine": engine,
        "seed": seed,
        "kills_per_point": kills,
        "survived_per_point": survived,
        "not_reached": misses,
        "kills_total": sum(kills.values()),
        "survived_total": sum(survived.values()),
        "messages_committed": len(committed_rows(workdir / "transcripts.db")),
        "lcm_messages": len(lcm_uids(workdir / "lcm.db")),
        "violations": violations,
        "seconds": round(time.perf_counter() - started, 2),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("workdir", type=Path)
    parser.add_argument("--seed", type=int, default=8)
    parser.add_argument("--kills-per-point", type=int, default=9)
    parser.add_argument("--turns-per-child", type=int, default=5)
    parser.add_argument("--engine", choices=sorted(POINTS), default="lcm")
    args = parser.parse_args(argv)
    report = run_campaign(
        args.workdir, args.seed, args.kills_per_point, args.turns_per_child, args.engine
    )
    print(json.dumps(report, indent=2))
    return 0 if not report["violations"] else 1


if __name__ == "__main__":
    sys.exit(main())
